"""Reviewing flags: the participant list and page in the admin, the study overview, and the
exports with their codebook. The experimenter decides; flags exclude no one by themselves."""

from __future__ import annotations

import csv
import io

import pytest

from participants import flags
from participants.models import Exclusion, Flag, Participant
from tests.participants.flagging import TEXT, NaiveBot, Person, typed
from tests.support.downloads import streamed_body

CHECK = {"Page two": {"check_1": "Disagree"}}
PASTED = {
    "Page three": {**typed("why", keys=2, pastes=1, pasted=len(TEXT), typing_ms=50), **CHECK["Page two"]}
}


def fetch(client, study, table: str) -> list[dict]:
    response = client.get(f"/admin/studies/study/{study.pk}/export/{table}.csv")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(streamed_body(response))))


@pytest.fixture
def cast(questionnaire_study):
    """A person, a person who pasted their free text, and a naive bot, all completed."""
    person, paster, bot = (
        Person(questionnaire_study),
        Person(questionnaire_study),
        NaiveBot(questionnaire_study),
    )
    person.enter()
    person.walk(answers=CHECK)
    paster.enter()
    paster.walk(answers={**CHECK, **PASTED})
    bot.enter()
    bot.walk(answers=CHECK)
    return {
        "person": Participant.objects.get(prolific_pid=person.pid),
        "paster": Participant.objects.get(prolific_pid=paster.pid),
        "bot": Participant.objects.get(prolific_pid=bot.pid),
    }


@pytest.mark.django_db
class TestAdmin:
    def test_the_list_shows_each_participants_flags_and_filters_by_them(self, experimenter, cast):
        base = f"/admin/participants/participant/?study__id__exact={cast['bot'].study_id}"
        listing = experimenter.get(base).content.decode()
        assert "honeypot ×5" in listing and "pasted_text" in listing
        only_bots = experimenter.get(base + "&flag=honeypot").content.decode()
        assert cast["bot"].prolific_pid in only_bots
        assert cast["paster"].prolific_pid not in only_bots and cast["person"].prolific_pid not in only_bots
        unflagged = experimenter.get(base + "&flag=none").content.decode()
        assert cast["person"].prolific_pid in unflagged and cast["bot"].prolific_pid not in unflagged
        flagged = experimenter.get(base + "&flag=any").content.decode()
        assert cast["bot"].prolific_pid in flagged and cast["paster"].prolific_pid in flagged
        assert experimenter.get(base + "&o=7").status_code == 200  # ordered by the flags column

    def test_the_participant_page_shows_flags_beside_timing_and_how_text_was_written(
        self, experimenter, cast
    ):
        html = experimenter.get(
            f"/admin/participants/participant/{cast['paster'].pk}/change/"
        ).content.decode()
        assert "Flags (evidence for review, never an exclusion by themselves)" in html
        assert f"{len(TEXT)} of {len(TEXT)} characters pasted (1 paste(s))" in html
        assert "How free text was written" in html and "Step visits" in html
        assert html.index("Attention failures:") < html.index("Flags:") < html.index("Excluded:")

    def test_flagged_participants_are_excluded_only_by_the_experimenter(self, experimenter, cast):
        bot = cast["bot"]
        assert not bot.excluded and not Exclusion.objects.filter(participant=bot).exists()
        asked = experimenter.post(
            "/admin/participants/participant/", {"action": "exclude_manually", "_selected_action": [bot.pk]}
        )
        assert "Why are they excluded" in asked.content.decode() and not Exclusion.objects.exists()
        experimenter.post(
            "/admin/participants/participant/",
            {
                "action": "exclude_manually",
                "_selected_action": [bot.pk],
                "confirm": "yes",
                "reason": "pasted every answer",
            },
        )
        exclusion = Exclusion.objects.get(participant=bot)
        assert (exclusion.reason, exclusion.detail) == (Exclusion.Reason.MANUAL, "pasted every answer")
        experimenter.post(
            "/admin/participants/participant/", {"action": "revoke_exclusions", "_selected_action": [bot.pk]}
        )
        bot.refresh_from_db()
        assert not bot.excluded

    def test_the_overview_counts_flagged_participants(self, experimenter, cast):
        html = experimenter.get(f"/admin/studies/study/{cast['bot'].study_id}/overview/").content.decode()
        assert "<h2>Flags</h2>" in html
        assert "Filled in a field hidden from people</a></td><td>1<" in html
        assert "Free text mostly pasted</a></td><td>1<" in html
        assert "Participants flagged</strong></td><td><strong>2<" in html


@pytest.mark.django_db
class TestExports:
    def test_participants_carry_their_flags_by_kind_and_count(self, experimenter, cast):
        rows = {r["prolific_pid"]: r for r in fetch(experimenter, cast["bot"].study, "participants")}
        person, paster, bot = (rows[cast[w].prolific_pid] for w in ("person", "paster", "bot"))
        assert (person["flags"], person["flag_count"]) == ("", "0")
        assert (paster["flags"], paster["flag_count"]) == ("pasted_text:1", "1")
        bot_flags = dict(part.split(":") for part in bot["flags"].split(";"))
        assert (
            bot_flags["honeypot"] == "5"
            and int(bot["flag_count"]) == Flag.objects.filter(participant=cast["bot"]).count()
        )
        assert list(bot_flags) == sorted(bot_flags)

    def test_step_times_carry_each_steps_flags(self, experimenter, cast):
        rows = fetch(experimenter, cast["bot"].study, "step_times")
        paster = {r["position"]: r["flags"] for r in rows if r["participant_id"] == str(cast["paster"].pk)}
        assert paster == {"1": "", "2": "", "3": "", "4": "pasted_text:1", "5": ""}

    def test_free_text_answers_carry_how_they_were_written(self, experimenter, cast):
        rows = fetch(experimenter, cast["bot"].study, "responses")
        why = {r["participant_id"]: r for r in rows if r["key"] == "why"}
        person, paster = why[str(cast["person"].pk)], why[str(cast["paster"].pk)]
        assert (person["text_keys"], person["text_pastes"], person["text_pasted_chars"]) == (
            str(len(TEXT) + 6),
            "0",
            "0",
        )
        assert person["text_typing_ms"] == str(len(TEXT) * 250)
        assert (paster["text_pastes"], paster["text_pasted_chars"]) == ("1", str(len(TEXT)))
        bot = why[str(cast["bot"].pk)]
        assert bot["text_keys"] == "" and bot["text_pastes"] == ""  # no browser counts: empty
        colour = next(r for r in rows if r["key"] == "colour")
        assert colour["text_keys"] == ""

    def test_the_codebook_explains_the_flag_columns(self, experimenter, cast):
        response = experimenter.get("/admin/studies/study/export/codebook.csv")
        rows = {
            (r["table"], r["column"]): r["description"]
            for r in csv.DictReader(io.StringIO(streamed_body(response)))
        }
        for kind in Flag.Kind.values:
            assert kind in rows["participants", "flags"]
        assert "never an exclusion" in rows["participants", "flags"]
        assert ("participants", "flag_count") in rows and ("step_times", "flags") in rows
        assert "never what was typed" in rows["responses", "text_keys"]

    def test_previews_flags_are_never_exported(self, experimenter, questionnaire_study):
        preview = NaiveBot(questionnaire_study, client=experimenter)
        preview.url = experimenter.get(f"/s/{questionnaire_study.slug}/preview/")["Location"]
        preview.submit({flags.HONEYPOT: "x"})
        assert Flag.objects.filter(kind=Flag.Kind.HONEYPOT).exists()
        assert fetch(experimenter, questionnaire_study, "participants") == []
        assert fetch(experimenter, questionnaire_study, "step_times") == []
