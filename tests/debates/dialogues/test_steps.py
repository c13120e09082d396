"""Design A's step kinds: story, dialogue (reading speed), judgement, bias detection, recall."""

from datetime import timedelta

import pytest
from django.utils import timezone

from debates.models import BiasReport, Condition, Dialogue, DialogueAssignment, Judgement, StudyDialogue
from participants.models import Exclusion, Participant, Response
from tests.support.cast import Walker


def start(study) -> tuple[Walker, DialogueAssignment]:
    w = Walker(study, read_seconds=0)  # these tests set the reading time themselves
    w.enter()
    w.walk(stop_before="The debate")
    return w, DialogueAssignment.objects.select_related("dialogue__case").get(participant__prolific_pid=w.pid)


def backdate_shown(w: Walker, seconds: float) -> None:
    Participant.objects.filter(prolific_pid=w.pid).update(
        shown_at=timezone.now() - timedelta(seconds=seconds)
    )


@pytest.mark.django_db
class TestStoryAndDialogue:
    def test_the_story_and_all_six_turns_are_shown_with_each_sides_stance(self, mystery_study):
        w, a = start(mystery_study)
        html = w.page()[0].content.decode()
        dialogue = a.dialogue
        for turn in dialogue.turns.all():
            # Up to the first citation ([E4] becomes a button that opens the evidence unit).
            first = turn.text.split("\n")[0].split("[")[0][:60]
            first_words = first.replace("'", "&#x27;").replace('"', "&quot;")
            assert first_words in html
        assert f"argues that <strong>{dialogue.suspect_for('A')}</strong>" in html
        assert f"argues that <strong>{dialogue.suspect_for('B')}</strong>" in html
        assert html.count('class="turn side-') == 6

    def test_reading_speed_is_computed_from_the_browsers_active_time(self, mystery_study):
        w, a = start(mystery_study)
        w.page()
        backdate_shown(w, 300)
        w.submit({"_active_ms": "240000"})
        a.refresh_from_db()
        assert a.reading_client_ms == 240000
        assert a.reading_server_ms >= 300000
        assert a.reading_ms == 240000
        assert a.wpm == pytest.approx(a.dialogue.words / 4, rel=1e-6)
        assert not Participant.objects.get(prolific_pid=w.pid).excluded

    def test_an_implausible_browser_time_falls_back_to_the_server_clock(self, mystery_study):
        w, a = start(mystery_study)
        w.page()
        backdate_shown(w, 120)
        w.submit({"_active_ms": "9999999"})
        a.refresh_from_db()
        assert a.reading_ms == a.reading_server_ms
        assert 120000 <= a.reading_ms < 130000

    def test_reading_at_or_above_the_cap_excludes_but_continues(self, mystery_study):
        w, a = start(mystery_study)
        w.page()
        backdate_shown(w, 30)
        w.submit({"_active_ms": "20000"})  # ~800 words in 20 s: far above 500 wpm
        p = Participant.objects.get(prolific_pid=w.pid)
        assert p.excluded and p.status == Participant.Status.ACTIVE
        exclusion = Exclusion.objects.get(participant=p)
        assert exclusion.reason == Exclusion.Reason.WPM
        assert "cap 500" in exclusion.detail
        assert w.page()[1].title == "Your judgement"


@pytest.mark.django_db
class TestJudgementAndChecks:
    def walk_to(self, study, title):
        w, a = start(study)
        w.page()
        backdate_shown(w, 600)
        w.submit({"_active_ms": "400000"})
        w.walk(stop_before=title, answers={"A quick question": {"attention_1": "Strongly disagree"}})
        return w, a

    def test_the_judgement_is_stored_with_its_correctness(self, mystery_study):
        w, a = self.walk_to(mystery_study, "Your judgement")
        w.submit(
            {
                "side": a.dialogue.culprit_side,
                "confidence": "77",
                "reasoning": "The key and the wax were decisive.",
            }
        )
        j = Judgement.objects.get(participant__prolific_pid=w.pid)
        assert j.chosen_side == a.dialogue.culprit_side and j.correct
        assert j.confidence == 77
        assert j.reasoning == "The key and the wax were decisive."

    def test_a_judgement_needs_a_side_and_enough_reasoning(self, mystery_study):
        w, _ = self.walk_to(mystery_study, "Your judgement")
        _, form = w.page()
        response = w.client.post(
            w.url, {"_position": form.position, "confidence": "50", "reasoning": "short"}
        )
        html = response.content.decode()
        assert response.status_code == 200
        assert "This field is required" in html and "at least 30 characters" in html
        assert not Judgement.objects.exists()

    def test_a_tampered_side_is_refused(self, mystery_study):
        w, _ = self.walk_to(mystery_study, "Your judgement")
        _, form = w.page()
        response = w.client.post(
            w.url, {"_position": form.position, "side": "C", "confidence": "50", "reasoning": "x" * 40}
        )
        assert "Select a valid choice" in response.content.decode()
        assert not Judgement.objects.exists()

    def test_bias_detection_requires_side_and_type_only_after_yes(self, mystery_study):
        w, a = self.walk_to(mystery_study, "About the debate")
        _, form = w.page()
        response = w.client.post(w.url, {"_position": form.position, "present": "yes"})
        assert response.content.decode().count("since you answered Yes above") == 2
        w.client.post(
            w.url, {"_position": form.position, "present": "no", "side": "A", "bias_type": "verbosity"}
        )
        report = BiasReport.objects.get(participant__prolific_pid=w.pid)
        assert (report.present, report.side, report.bias_type) == ("no", "", "")

    def test_bias_detection_offers_the_studys_own_conditions_as_data(self, mystery_study):
        Condition.objects.create(
            slug="sarcasm", label="Sarcasm", description="Sarcasm — a side mocked the other"
        )
        only = StudyDialogue.objects.filter(study=mystery_study).order_by("pk").first().dialogue
        Dialogue.objects.filter(pk=only.pk).update(condition="sarcasm", active_side="rival", variant="V1")
        StudyDialogue.objects.filter(study=mystery_study).exclude(dialogue=only).update(active=False)
        w, a = self.walk_to(mystery_study, "About the debate")
        _, form = w.page()
        assert form.radios["bias_type"] == ["sarcasm", "other"]
        w.submit({"present": "yes", "side": "B", "bias_type": "sarcasm"}, form)
        assert BiasReport.objects.get(participant__prolific_pid=w.pid).bias_type == "sarcasm"

    def test_the_recall_check_asks_the_cases_own_question(self, mystery_study):
        w, a = self.walk_to(mystery_study, "One more question about the debate")
        recall = a.dialogue.case.recall
        html, form = w.page()
        assert recall["question"] in html.content.decode()
        assert sorted(form.radios["answer"]) == sorted(recall["options"])
        w.submit({"answer": recall["answer"]}, form)
        assert Response.objects.get(participant__prolific_pid=w.pid, key="recall").passed is True
        assert not Exclusion.objects.exists()

    def test_a_wrong_recall_answer_excludes_the_participant(self, mystery_study):
        w, a = self.walk_to(mystery_study, "One more question about the debate")
        recall = a.dialogue.case.recall
        wrong = next(o for o in recall["options"] if o != recall["answer"])
        w.submit({"answer": wrong})
        p = Participant.objects.get(prolific_pid=w.pid)
        assert Exclusion.objects.get(participant=p).reason == Exclusion.Reason.RECALL
        assert Response.objects.get(participant=p, key="recall").passed is False
        assert p.status == Participant.Status.ACTIVE

    def test_without_a_case_question_it_asks_whom_side_a_blamed(self, mystery_study):
        from debates.models import Case

        Case.objects.update(recall={})
        w, a = self.walk_to(mystery_study, "One more question about the debate")
        _, form = w.page()
        assert set(form.radios["answer"]) == set(a.dialogue.case.suspect_names)
        w.submit({"answer": a.dialogue.suspect_for("A")}, form)
        assert Response.objects.get(participant__prolific_pid=w.pid, key="recall").passed is True

    def test_the_whole_demo_study_completes(self, mystery_study):
        w, a = self.walk_to(mystery_study, None)
        assert w.exit_url == "https://app.prolific.com/submissions/complete?cc=CMYSTDONE"
        assert Participant.objects.get(prolific_pid=w.pid).status == Participant.Status.COMPLETED


@pytest.mark.django_db
class TestRereading:
    """The judgement page offers the debate again: time spent reading it there counts."""

    def skim_then_judge(self, study, skim_s: float, judge_s: float, reread_ms: str):
        w, a = start(study)
        w.page()
        backdate_shown(w, skim_s)
        w.submit({"_active_ms": str(int(skim_s * 1000))})
        w.walk(
            stop_before="Your judgement", answers={"A quick question": {"attention_1": "Strongly disagree"}}
        )
        html, form = w.page()
        assert (
            'data-reread="_reread_ms"' in html.content.decode() and "js/reading.js" in html.content.decode()
        )
        backdate_shown(w, judge_s)
        reasons = "The wax seal and the key were decisive."
        w.submit({"side": "A", "confidence": "60", "reasoning": reasons, "_reread_ms": reread_ms}, form)
        a.refresh_from_db()
        return w, a

    def test_a_skimmer_who_reads_the_recap_is_no_longer_excluded(self, mystery_study):
        w, a = self.skim_then_judge(mystery_study, skim_s=20, judge_s=250, reread_ms="200000")
        assert a.reading_ms == 20000 and a.reread_ms == 200000
        assert a.wpm == pytest.approx(a.dialogue.words / (220000 / 60000))
        assert a.wpm < mystery_study.wpm_cap
        p = Participant.objects.get(prolific_pid=w.pid)
        assert not p.excluded
        lifted = Exclusion.objects.get(participant=p, reason=Exclusion.Reason.WPM)
        assert lifted.revoked_at is not None and "re-reading on the judgement page" in lifted.revoke_note

    def test_the_browsers_figure_is_capped_by_the_servers_time_on_the_page(self, mystery_study):
        w, a = self.skim_then_judge(mystery_study, skim_s=20, judge_s=30, reread_ms="99999999")
        assert 30000 <= a.reread_ms < 40000
        assert a.wpm == pytest.approx(a.dialogue.words / ((20000 + a.reread_ms) / 60000))
        assert Participant.objects.get(prolific_pid=w.pid).excluded  # still far too fast

    def test_no_recap_opened_or_garbage_adds_nothing(self, mystery_study):
        w, a = self.skim_then_judge(mystery_study, skim_s=300, judge_s=60, reread_ms="soon")
        assert a.reread_ms == 0 and a.reading_ms == 300000
        assert a.wpm == pytest.approx(a.dialogue.words / 5)
