"""Entry flooding (issue 12): one client filling a study with made-up PROLIFIC_PIDs. Limits per
client address on entries and on places taken, a short lease for a place taken and not worked
on, STUDY_ID and SESSION_ID checked against the study's Prolific id, and the overview's alert;
real arrivals from many addresses go through untouched. The suite turns the per-address limits
off (tests/conftest.py); these tests turn them on."""

from __future__ import annotations

import secrets
import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from common import limits
from common.limits import UNREADABLE, client_address
from debates.demo import loader
from debates.dialogues.services import dialogue_fill
from debates.models import DialogueAssignment
from participants import flags, services
from participants.models import Participant
from tests.support.cast import Walker, entry_url
from tests.support.studies import QUESTIONNAIRE_STEPS, STUDY_ID, build_study

pytestmark = pytest.mark.django_db

DEFAULT_ENTRY_LIMITS = ["20/60", "120/3600"]
DEFAULT_PLACE_LIMITS = ["6/60", "30/3600"]


@pytest.fixture(autouse=True)
def limits_on(settings, one_rate_window):
    """The limits as deployed, and counters of no earlier test (in memory, a study's id comes
    back after a rolled-back test; in Redis, every address here is a fresh random one)."""
    settings.ENTRY_RATE_LIMITS = DEFAULT_ENTRY_LIMITS
    settings.PLACE_RATE_LIMITS = DEFAULT_PLACE_LIMITS
    if not settings.REDIS_URL:
        cache.clear()


def address() -> str:
    """A fresh public IPv4 address (TEST-NET-3 and friends are fine: nothing is looked up)."""
    return f"198.51.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"


def from_address(ip: str, **headers) -> Client:
    return Client(REMOTE_ADDR=ip, **headers)


def forget_refusals(study) -> None:
    """A study's id may be an earlier run's (PostgreSQL's test database starts afresh)."""
    bucket = int(timezone.now().timestamp() // flags.BUCKET_S)
    limits.count_forget([flags._refusals_key(study.pk, b) for b in range(bucket - 6, bucket + 1)])


def at_story(study, client: Client) -> tuple[Walker, object]:
    """A participant who consented, read the instructions and asked for the story page."""
    w = Walker(study, client=client)
    w.enter()
    w.walk(stop_before="The story")
    response, _ = w.page()
    return w, response


@pytest.fixture
def roomy_study(db):
    """The demo's design-A study with 30 places (10 dialogues, 3 each)."""
    return loader.mystery_study(target_per_item=3)


# --- The flood ------------------------------------------------------------------------------


def test_one_address_cannot_fill_a_study_with_made_up_ids(roomy_study):
    forget_refusals(roomy_study)
    flooder = address()
    statuses = []
    for _ in range(12):
        w = Walker(roomy_study, client=from_address(flooder))
        entry = w.client.get(entry_url(roomy_study))
        if entry.status_code != 302:
            statuses.append(entry.status_code)
            continue
        w.url = entry["Location"]
        w.walk(stop_before="The story")
        response, _ = w.page()
        statuses.append(response.status_code)
    assert statuses.count(200) == 6  # the place limit: 6 a minute per address
    assert statuses.count(429) == 6
    assert DialogueAssignment.objects.count() == 6
    # Someone else, from their own address, still gets a place at once.
    _, response = at_story(roomy_study, from_address(address()))
    assert response.status_code == 200
    assert DialogueAssignment.objects.count() == 7


def test_a_refused_place_says_when_to_come_back_and_takes_nothing(settings, roomy_study):
    settings.PLACE_RATE_LIMITS = ["1/60"]
    client = from_address(address())
    at_story(roomy_study, client)
    w, response = at_story(roomy_study, client)
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 61
    assert "Please wait a minute" in response.content.decode()
    refused = Participant.objects.get(prolific_pid=w.pid)
    assert refused.is_active and refused.placed_at is None and refused.served_at is None
    assert DialogueAssignment.objects.count() == 1


def test_entries_from_one_address_are_limited_but_not_those_of_others(settings, questionnaire_study):
    settings.ENTRY_RATE_LIMITS = ["3/60"]
    busy = from_address(address())
    assert [busy.get(entry_url(questionnaire_study)).status_code for _ in range(4)] == [302, 302, 302, 429]
    assert Participant.objects.count() == 3
    assert from_address(address()).get(entry_url(questionnaire_study)).status_code == 302


@pytest.mark.parametrize("peer", ["unknown", "x-abcd", "203.0.113.300"])
def test_a_peer_that_is_not_an_address_is_limited_as_one_client(settings, questionnaire_study, peer):
    """uvicorn's --proxy-headers puts what a trusted proxy forwarded in the peer's place, unread:
    "X-Forwarded-For: unknown" passed through made every per-address limit let everything in
    (the hostile-traffic probe). Such peers count as one client."""
    settings.ENTRY_RATE_LIMITS = ["3/3600"]
    # One shared key: with Redis its count outlives the test before (every other test's
    # addresses are fresh).
    now = time.time()
    limits.count_forget(
        [limits._window_name("entry", UNREADABLE, w, now) for w in limits.windows(("3/3600",))]
    )
    codes = [from_address(peer).get(entry_url(questionnaire_study)).status_code for _ in range(4)]
    assert codes == [302, 302, 302, 429]
    assert from_address("garbage").get(entry_url(questionnaire_study)).status_code == 429  # the same one
    assert from_address(address()).get(entry_url(questionnaire_study)).status_code == 302


def test_real_arrivals_from_many_addresses_are_never_limited(roomy_study):
    for _ in range(30):
        _, response = at_story(roomy_study, from_address(address()))
        assert response.status_code == 200
    assert DialogueAssignment.objects.count() == 30


def test_pilots_are_not_limited(settings, questionnaire_study):
    from participants.services import pilot_token

    settings.ENTRY_RATE_LIMITS = ["1/60"]
    client = from_address(address())
    for _ in range(3):
        url = entry_url(questionnaire_study) + f"&pilot={pilot_token(questionnaire_study)}"
        assert client.get(url).status_code == 302
    assert Participant.objects.filter(is_pilot=True).count() == 3


# --- Whose address ---------------------------------------------------------------------------


def test_the_address_is_the_peer_unless_the_peer_is_a_trusted_proxy(settings):
    assert client_address("203.0.113.9", "198.51.100.1") == "203.0.113.9"  # trust nothing by default
    settings.TRUSTED_PROXIES = ["10.0.0.0/8", "203.0.113.9"]
    assert client_address("203.0.113.9", "198.51.100.1") == "198.51.100.1"
    # The rightmost address that is not a trusted proxy: what a client writes in front is ignored.
    assert client_address("10.1.1.1", "1.2.3.4, 198.51.100.7, 10.2.2.2") == "198.51.100.7"
    assert client_address("10.1.1.1", "garbage") == "10.1.1.1"
    assert client_address("unknown", "1.2.3.4") == client_address("x", "") == "0.0.0.0"  # one client
    assert client_address("", "1.2.3.4") == ""  # no peer at all (a Unix socket): no limit applies
    assert client_address("198.51.100.8", "1.2.3.4") == "198.51.100.8"  # not a proxy of ours


def test_ipv6_clients_count_per_64_network():
    assert (
        client_address("2001:db8:1:2:aaaa::1")
        == client_address("2001:db8:1:2:bbbb::9")
        == "2001:db8:1:2::/64"
    )
    assert client_address("::ffff:198.51.100.3") == "198.51.100.3"
    assert client_address("") == ""  # unknown peer (a unix socket): no limit applies


def test_one_proxy_in_front_counts_each_forwarded_client_apart(settings, questionnaire_study):
    settings.ENTRY_RATE_LIMITS = ["2/60"]
    proxy = f"10.9.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"

    def enter(forwarded: str) -> int:
        client = from_address(proxy, HTTP_X_FORWARDED_FOR=forwarded)
        return client.get(entry_url(questionnaire_study)).status_code

    untrusted = [enter(address()) for _ in range(3)]
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    trusted = [enter(address()) for _ in range(5)]
    assert untrusted == [302, 302, 429]  # the proxy's header is not believed: one client
    assert trusted == [302] * 5


# --- The idle lease --------------------------------------------------------------------------


def test_a_place_taken_and_not_worked_on_is_held_only_for_the_idle_lease(settings, roomy_study):
    w, _ = at_story(roomy_study, from_address(address()))
    p = Participant.objects.get(prolific_pid=w.pid)
    assert p.place_idle and p.placed_at is not None
    assert p.expires_at <= p.placed_at + timedelta(minutes=settings.PLACE_IDLE_MINUTES)
    assert p.expires_at < p.started_at + timedelta(minutes=roomy_study.effective_time_limit_minutes)


def test_the_first_answer_holds_the_place_for_the_whole_time_limit(roomy_study):
    w, _ = at_story(roomy_study, from_address(address()))
    w.submit()  # "I have read the story"
    p = Participant.objects.get(prolific_pid=w.pid)
    assert not p.place_idle
    assert p.expires_at == p.started_at + timedelta(minutes=roomy_study.effective_time_limit_minutes)


def test_an_idle_place_comes_free_after_its_short_lease(settings):
    study = loader.mystery_study(target_per_item=1)
    first, _ = at_story(study, from_address(address()))
    idle = Participant.objects.get(prolific_pid=first.pid)
    slot = DialogueAssignment.objects.get(participant=idle).study_dialogue_id
    later = idle.placed_at + timedelta(minutes=settings.PLACE_IDLE_MINUTES, seconds=1)
    assert dialogue_fill(study, idle.placed_at + timedelta(seconds=1))[slot] == 1
    assert dialogue_fill(study, later)[slot] == 0  # no longer counted: someone else may take it


def test_a_participant_reading_past_the_idle_lease_is_not_timed_out_but_the_place_comes_free(settings):
    """The researcher walk: a participant five minutes into a long story was marked timed out
    (overview, exports, API) though well within the study's time limit. The place stops
    counting all the same; the status does not change until the time limit's end."""
    study = loader.mystery_study(target_per_item=1)
    reader, _ = at_story(study, from_address(address()))
    p = Participant.objects.get(prolific_pid=reader.pid)
    slot = DialogueAssignment.objects.get(participant=p).study_dialogue_id
    later = p.placed_at + timedelta(minutes=settings.PLACE_IDLE_MINUTES, seconds=1)
    assert services.release_expired_leases(now=later) == 0
    p.refresh_from_db()
    assert p.status == Participant.Status.ACTIVE and p.finished_at is None
    assert dialogue_fill(study, later)[slot] == 0  # someone else may take it meanwhile
    # Still reading at the end of the time limit: timed out then, as anyone.
    end = p.started_at + timedelta(minutes=study.effective_time_limit_minutes, seconds=1)
    assert services.release_expired_leases(now=end) == 1
    p.refresh_from_db()
    assert p.status == Participant.Status.TIMED_OUT


def test_the_overview_counts_a_reader_past_the_idle_lease_at_their_step(settings, roomy_study):
    """Left active by the sweep, a reader past the idle lease was counted "in progress past the
    time limit" and missing from their step's count (the review)."""
    from analysis.overview import study_overview

    w, _ = at_story(roomy_study, from_address(address()))
    p = Participant.objects.get(prolific_pid=w.pid)
    Participant.objects.filter(pk=p.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    overview = study_overview(roomy_study)
    story = next(s for s in overview["steps"] if s["position"] == p.position)
    assert (story["active"], overview["expired_active"]) == (1, 0)
    # Past the time limit itself: counted as such, not at the step.
    limit = timedelta(minutes=roomy_study.effective_time_limit_minutes, seconds=1)
    Participant.objects.filter(pk=p.pk).update(started_at=timezone.now() - limit)
    overview = study_overview(roomy_study)
    story = next(s for s in overview["steps"] if s["position"] == p.position)
    assert (story["active"], overview["expired_active"]) == (0, 1)


def test_a_reader_back_after_the_idle_lease_keeps_a_place_still_free(settings, roomy_study):
    w, _ = at_story(roomy_study, from_address(address()))
    Participant.objects.filter(prolific_pid=w.pid).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.release_expired_leases() == 0
    w.submit()  # "I have read the story", minutes late: the place was still free
    p = Participant.objects.get(prolific_pid=w.pid)
    assert p.is_active and not p.place_idle
    assert p.expires_at == p.started_at + timedelta(minutes=roomy_study.effective_time_limit_minutes)


def test_an_idle_participant_back_after_the_lease_gets_the_short_lease_again(settings, roomy_study):
    w, _ = at_story(roomy_study, from_address(address()))
    Participant.objects.filter(prolific_pid=w.pid).update(
        expires_at=timezone.now() - timedelta(seconds=1), status=Participant.Status.TIMED_OUT
    )
    response, story = w.page()  # a refresh: the place is still free, so it is kept
    assert story.title == "The story"
    p = Participant.objects.get(prolific_pid=w.pid)
    assert p.is_active and p.place_idle
    assert p.expires_at <= timezone.now() + timedelta(minutes=settings.PLACE_IDLE_MINUTES)


def test_the_flow_engines_own_pages_take_no_place_and_are_not_limited(settings, questionnaire_study):
    settings.PLACE_RATE_LIMITS = ["1/60"]
    client = from_address(address())
    for _ in range(3):
        w = Walker(questionnaire_study, client=client)
        w.enter()
        w.walk()
        assert w.exit_url.endswith("CDONE")
    assert not Participant.objects.exclude(placed_at=None).exists()


# --- Prolific's ids --------------------------------------------------------------------------


def test_a_session_id_already_used_by_another_participant_is_refused(questionnaire_study):
    client = from_address(address())
    session = secrets.token_hex(12)

    def enter(pid: str, session_id: str) -> int:
        url = f"/s/{questionnaire_study.slug}/?PROLIFIC_PID={pid}&STUDY_ID={STUDY_ID}&SESSION_ID={session_id}"
        return client.get(url).status_code

    first = secrets.token_hex(12)
    assert enter(first, session) == 302
    assert enter(first, session) == 302  # the same participant coming back
    assert enter(secrets.token_hex(12), session) == 400
    assert Participant.objects.count() == 1


def test_a_session_id_equal_to_the_participant_or_study_id_is_refused(questionnaire_study):
    client = from_address(address())
    pid = secrets.token_hex(12)
    base = f"/s/{questionnaire_study.slug}/?PROLIFIC_PID={pid}&STUDY_ID={STUDY_ID}"
    assert client.get(f"{base}&SESSION_ID={pid}").status_code == 400
    assert client.get(f"{base}&SESSION_ID={STUDY_ID}").status_code == 400
    assert not Participant.objects.exists()


def test_a_study_without_a_prolific_id_checks_no_session_ids(questionnaire_study):
    from studies.models import Study

    Study.objects.filter(pk=questionnaire_study.pk).update(prolific_study_id="", pilot=True)
    client = from_address(address())
    session = secrets.token_hex(12)
    slug = questionnaire_study.slug
    for _ in range(2):
        ids = f"PROLIFIC_PID={secrets.token_hex(12)}&STUDY_ID={secrets.token_hex(12)}&SESSION_ID={session}"
        url = f"/s/{slug}/?{ids}"
        assert client.get(url).status_code == 302


# --- The overview's alert --------------------------------------------------------------------


def test_the_overview_warns_when_entries_look_automated(settings, experimenter):
    study = build_study(QUESTIONNAIRE_STEPS)
    forget_refusals(study)
    url = f"/admin/studies/study/{study.pk}/overview/"
    assert "Entries look automated" not in experimenter.get(url).content.decode()
    settings.ENTRY_RATE_LIMITS = ["1/60"]
    flooder = from_address(address())
    statuses: list[int] = []
    # Fixed one-minute windows: a minute boundary during the flood lets one more entry in.
    while statuses.count(429) < flags.ALERT_REFUSED and len(statuses) < flags.ALERT_REFUSED + 3:
        statuses.append(flooder.get(entry_url(study)).status_code)
    assert statuses.count(429) == flags.ALERT_REFUSED and statuses.count(429) >= len(statuses) - 2
    page = experimenter.get(url).content.decode()
    assert "Entries look automated" in page
    assert f"In the last hour {flags.ALERT_REFUSED} entries or places were refused" in page


def test_the_overview_counts_places_left_idle(settings, roomy_study):
    forget_refusals(roomy_study)
    walkers = [at_story(roomy_study, from_address(address()))[0] for _ in range(flags.ALERT_IDLE)]
    now = timezone.now()
    assert not flags.entry_alert(study_id=roomy_study.pk, now=now).raised
    later = now + timedelta(minutes=settings.PLACE_IDLE_MINUTES + 1)
    alert = flags.entry_alert(study_id=roomy_study.pk, now=later)
    assert (alert.idle, alert.raised) == (flags.ALERT_IDLE, True)
    walkers[0].submit()  # one of them was only reading
    assert flags.entry_alert(study_id=roomy_study.pk, now=later).idle == flags.ALERT_IDLE - 1
