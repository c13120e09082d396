"""Prolific's statuses reach Rostrum: the periodic sync (and `manage.py prolific_sync`) frees
the places of RETURNED, TIMED-OUT and REJECTED submissions through the flow engine's own
services, once per change; a signed webhook does the same at once; a bad signature is refused."""

import json
import time
from io import StringIO

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.test import Client as HttpClient
from django.utils import timezone

from devtools.fakeprolific import FakeProlific
from participants import prolific
from participants.models import Exclusion, Participant, ProlificStudy, ProlificSubmission
from participants.places import holds_place_q
from participants.tasks import prolific_sync
from studies.models import Study
from tests.participants.prolific_support import (  # noqa: F401
    fake_fixture,
    on_prolific,
    participant_of,
    prolific_server_fixture,
    submission_of,
)
from tests.support.cast import Walker
from tests.support.studies import QUESTIONNAIRE_STEPS, build_study

SECRET = "a-webhook-secret-of-the-workspace"


def holds_place(walker: Walker) -> bool:
    return Participant.objects.filter(holds_place_q(timezone.now()), pk=participant_of(walker).pk).exists()


@pytest.mark.django_db
class TestTheSync:
    def test_returned_timed_out_and_rejected_submissions_free_their_places(
        self, fake: FakeProlific, questionnaire_study
    ):
        returned, timed_out, rejected, working = (
            on_prolific(fake, questionnaire_study, steps=1) for _ in range(4)
        )
        done = on_prolific(fake, questionnaire_study)
        done.walk(answers={"Page two": {"check_1": "Disagree"}})
        assert all(holds_place(w) for w in (returned, timed_out, working, done))
        fake.submission_set(submission_of(fake, returned)["id"], "RETURNED")
        fake.submission_set(submission_of(fake, timed_out)["id"], "TIMED-OUT")
        fake.submission_set(submission_of(fake, rejected)["id"], "REJECTED")
        fake.submission_set(submission_of(fake, done)["id"], "REJECTED")
        report = prolific.prolific_sync(study=questionnaire_study)
        assert (report.seen, report.freed) == (5, 4)
        assert participant_of(returned).status == "returned" and not holds_place(returned)
        assert participant_of(timed_out).status == "timed_out" and not holds_place(timed_out)
        assert not holds_place(rejected) and not holds_place(done)
        assert participant_of(done).status == "completed" and participant_of(done).excluded
        assert Exclusion.objects.get(participant=participant_of(done)).detail == "Rejected on Prolific"
        assert holds_place(working)

    def test_returned_after_completing_is_excluded_and_timed_out_after_completing_only_flagged(
        self, fake: FakeProlific, questionnaire_study
    ):
        returned, timed_out = (on_prolific(fake, questionnaire_study) for _ in range(2))
        for walker, status in ((returned, "RETURNED"), (timed_out, "TIMED-OUT")):
            walker.walk(answers={"Page two": {"check_1": "Disagree"}})
            fake.submission_set(submission_of(fake, walker)["id"], status)
        assert prolific.prolific_sync(study=questionnaire_study).freed == 1
        assert participant_of(returned).excluded and not holds_place(returned)
        assert not participant_of(timed_out).excluded and holds_place(timed_out)
        row = ProlificSubmission.objects.get(participant=participant_of(timed_out))
        assert prolific.disagreement(row.participant, row).startswith(
            "Timed out on Prolific after completing"
        )

    def test_each_change_is_applied_once(self, fake: FakeProlific, questionnaire_study):
        done = on_prolific(fake, questionnaire_study)
        done.walk(answers={"Page two": {"check_1": "Disagree"}})
        fake.submission_set(submission_of(fake, done)["id"], "REJECTED")
        prolific.prolific_sync(study=questionnaire_study)
        exclusion = Exclusion.objects.get(participant=participant_of(done))
        Exclusion.objects.filter(pk=exclusion.pk).update(
            revoked_at=timezone.now()
        )  # the experimenter keeps them
        Participant.objects.filter(pk=participant_of(done).pk).update(excluded=False)
        assert prolific.prolific_sync(study=questionnaire_study).freed == 0
        assert not participant_of(done).excluded

    def test_the_sync_keeps_prolifics_status_beside_rostrums_and_flags_disagreements(
        self, fake: FakeProlific, questionnaire_study
    ):
        pasted_a_code = on_prolific(fake, questionnaire_study, steps=1)
        fake.submission_set(submission_of(fake, pasted_a_code)["id"], "AWAITING_REVIEW", entered_code="CDONE")
        never_came = fake.submission_add(questionnaire_study.prolific_study_id, status="AWAITING_REVIEW")
        report = prolific.prolific_sync(study=questionnaire_study)
        assert report.disagreements == 2
        row = ProlificSubmission.objects.get(participant=participant_of(pasted_a_code))
        assert row.get_status_display() == "AWAITING REVIEW" and row.entered_code == "CDONE"
        assert prolific.disagreement(row.participant, row) == "Submitted on Prolific, but in progress here."
        orphan = ProlificSubmission.objects.get(submission_id=never_came["id"])
        assert prolific.disagreement(None, orphan).startswith(
            "Submitted on Prolific but never reached Rostrum"
        )
        assert ProlificStudy.objects.get(study=questionnaire_study).status == "ACTIVE"

    def test_the_periodic_task_syncs_running_studies(self, fake: FakeProlific, questionnaire_study):
        walker = on_prolific(fake, questionnaire_study, steps=1)  # live here, STUDY_ID set by hand
        draft = build_study(QUESTIONNAIRE_STEPS, status="draft", prolific_study_id="b" * 24)
        fake.submission_set(submission_of(fake, walker)["id"], "RETURNED")
        assert prolific_sync() == 1
        assert participant_of(walker).status == "returned"
        assert ProlificStudy.objects.get(study=questionnaire_study).status == "ACTIVE"
        assert not ProlificStudy.objects.filter(study=draft).exists()  # neither live here nor published there

    def test_the_periodic_task_does_nothing_without_a_token(
        self, fake: FakeProlific, questionnaire_study, settings
    ):
        on_prolific(fake, questionnaire_study)
        prolific.prolific_study_link(study=questionnaire_study)
        ProlificStudy.objects.update(status="ACTIVE")
        settings.PROLIFIC_API_TOKEN = ""
        fake.requests.clear()
        assert prolific_sync() == 0 and fake.requests == []

    def test_a_failed_sync_is_said_on_the_study(self, fake: FakeProlific, questionnaire_study):
        on_prolific(fake, questionnaire_study)
        fake.script("GET", r"/submissions/$", status=403)
        with pytest.raises(prolific.ProlificError):
            prolific.prolific_sync(study=questionnaire_study)
        assert "forbidden" in ProlificStudy.objects.get(study=questionnaire_study).sync_error

    def test_the_command_syncs_one_study(self, fake: FakeProlific, questionnaire_study):
        walker = on_prolific(fake, questionnaire_study, steps=1)
        fake.submission_set(submission_of(fake, walker)["id"], "TIMED-OUT")
        out = StringIO()
        call_command("prolific_sync", questionnaire_study.slug, stdout=out)
        assert out.getvalue().startswith("1 submission(s) on Prolific; 1 place(s) freed")
        with pytest.raises(CommandError, match="No study"):
            call_command("prolific_sync", "no-such-study")

    def test_beat_schedules_the_sync(self):
        entry = django_settings.CELERY_BEAT_SCHEDULE["prolific-sync"]
        assert entry["task"] == prolific_sync.name and entry["schedule"] == 120


def signed_post(client: HttpClient, event: dict, *, secret: str = SECRET, sent: float | None = None):
    body = json.dumps(event).encode()
    timestamp = str(int(sent if sent is not None else time.time()))
    signature = prolific.webhook_sign(body=body, secret=secret, timestamp=timestamp)
    return client.post(
        "/prolific/webhook/",
        body,
        content_type="application/json",
        headers={"X-Prolific-Request-Signature": signature, "X-Prolific-Request-Timestamp": timestamp},
    )


@pytest.fixture
def webhook_secret(settings):
    settings.PROLIFIC_WEBHOOK_SECRET = SECRET
    return SECRET


@pytest.mark.django_db
class TestTheWebhook:
    def returning(self, fake: FakeProlific, study: Study) -> tuple[Walker, dict]:
        walker = on_prolific(fake, study, steps=1)
        event = {
            "event_type": "submission.status.change",
            "resource_id": submission_of(fake, walker)["id"],
            "status": "RETURNED",
            "study_id": study.prolific_study_id,
            "participant_id": walker.pid,
        }
        return walker, event

    def test_a_signed_event_frees_the_place_at_once(
        self, fake: FakeProlific, questionnaire_study, webhook_secret
    ):
        walker, event = self.returning(fake, questionnaire_study)
        fake.requests.clear()
        response = signed_post(HttpClient(), event)
        assert response.status_code == 204
        assert participant_of(walker).status == "returned" and not holds_place(walker)
        assert fake.requests == []  # the event said everything: no call to Prolific

    def test_an_event_that_names_only_the_submission_is_completed_from_the_api(
        self, fake: FakeProlific, questionnaire_study, webhook_secret
    ):
        walker, event = self.returning(fake, questionnaire_study)
        fake.submission_set(event["resource_id"], "TIMED-OUT")
        response = signed_post(
            HttpClient(), {"event_type": "submission.status.change", "resource_id": event["resource_id"]}
        )
        assert response.status_code == 204 and participant_of(walker).status == "timed_out"

    def test_a_bad_signature_is_refused(self, fake: FakeProlific, questionnaire_study, webhook_secret):
        walker, event = self.returning(fake, questionnaire_study)
        assert signed_post(HttpClient(), event, secret="not-the-secret").status_code == 403
        body = json.dumps(event).encode()
        timestamp = str(int(time.time()))
        signature = prolific.webhook_sign(body=body, secret=SECRET, timestamp=timestamp)
        tampered = HttpClient().post(
            "/prolific/webhook/",
            body.replace(b"RETURNED", b"REJECTED"),
            content_type="application/json",
            headers={"X-Prolific-Request-Signature": signature, "X-Prolific-Request-Timestamp": timestamp},
        )
        assert tampered.status_code == 403
        unsigned = HttpClient().post("/prolific/webhook/", body, content_type="application/json")
        assert unsigned.status_code == 403
        assert participant_of(walker).status == "active" and not participant_of(walker).excluded

    def test_a_replayed_event_is_refused(self, fake: FakeProlific, questionnaire_study, webhook_secret):
        walker, event = self.returning(fake, questionnaire_study)
        assert signed_post(HttpClient(), event, sent=time.time() - 3600).status_code == 403
        assert participant_of(walker).status == "active"

    def test_the_webhook_is_off_without_a_secret(self, fake: FakeProlific, questionnaire_study, settings):
        settings.PROLIFIC_WEBHOOK_SECRET = ""
        walker, event = self.returning(fake, questionnaire_study)
        assert signed_post(HttpClient(), event, secret="").status_code == 404
        assert participant_of(walker).status == "active"

    def test_an_event_of_another_study_changes_nothing(
        self, fake: FakeProlific, questionnaire_study, webhook_secret
    ):
        walker, event = self.returning(fake, questionnaire_study)
        other = fake.study_add()
        stranger = fake.submission_add(other["id"], status="RETURNED")
        event = {**event, "resource_id": stranger["id"], "study_id": other["id"]}
        assert signed_post(HttpClient(), event).status_code == 204
        assert participant_of(walker).status == "active"
        assert not ProlificSubmission.objects.filter(submission_id=stranger["id"]).exists()

    def test_prolifics_own_example_of_signing_is_accepted(self):
        body = json.dumps({"resource_id": "abc", "status": "RETURNED"}, separators=(",", ":")).encode()
        timestamp = str(int(time.time()))
        as_prolific_signs = prolific.webhook_sign(
            body=json.dumps(json.loads(body)).encode(), secret=SECRET, timestamp=timestamp
        )
        assert prolific.webhook_verified(
            body=body, timestamp=timestamp, signature=as_prolific_signs, secret=SECRET
        )
