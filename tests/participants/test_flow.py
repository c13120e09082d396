"""The flow engine: steps in order, answers stored once, no skipping, checks and exits."""

import pytest
from django.test import Client

from devtools.formparse import default_answers
from participants.models import Exclusion, Participant, Response, StepVisit
from tests.support.cast import Walker
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

PROLIFIC = "https://app.prolific.com/submissions/complete?cc="


@pytest.fixture
def walker(questionnaire_study):
    w = Walker(questionnaire_study)
    w.enter()
    return w


def participant(w: Walker) -> Participant:
    return Participant.objects.get(prolific_pid=w.pid)


@pytest.mark.django_db
class TestSteps:
    def test_a_full_walk_ends_at_prolific_with_the_completion_code(self, walker):
        walker.walk(answers={"Page two": {"check_1": "Disagree"}})
        assert walker.exit_url == "https://app.prolific.com/submissions/complete?cc=CDONE"
        p = participant(walker)
        assert p.status == Participant.Status.COMPLETED
        assert p.finished_at is not None
        keys = set(Response.objects.filter(participant=p).values_list("key", flat=True))
        assert keys == {"consent", "colour", "agree", "check_1", "check_2", "age", "warmth", "why"}
        assert StepVisit.objects.filter(participant=p).count() == 5

    def test_the_debrief_shows_the_completion_code_before_the_button_completes(self, walker):
        """Should the return to Prolific fail (a blocked redirect, no connection), the code is
        on the page already; the button is still what completes the study."""
        walker.walk(answers={"Page two": {"check_1": "Disagree"}}, stop_before="Thanks")
        response, form = walker.page()
        page = response.content.decode()
        assert form.title == "Thanks"
        assert "Your completion code:" in page and '<strong class="code">CDONE</strong>' in page
        assert participant(walker).status == Participant.Status.ACTIVE
        walker.submit()
        assert walker.exit_url == PROLIFIC + "CDONE"
        assert participant(walker).status == Participant.Status.COMPLETED

    def test_answers_are_stored_with_numeric_codes(self, walker):
        walker.walk(
            answers={
                "Page one": {"colour": "Blue", "agree": "Yes"},
                "Page two": {"check_1": "Disagree"},
                "Page three": {"age": "33", "warmth": "81", "why": "Because it is warm."},
            }
        )
        rows = {r.key: r for r in Response.objects.filter(participant=participant(walker))}
        assert rows["colour"].value == "Blue" and rows["colour"].value_num is None
        assert rows["agree"].value == "Yes" and rows["agree"].value_num == 3.0
        assert rows["age"].value_num == 33.0
        assert rows["warmth"].value_num == 81.0
        assert rows["why"].value == "Because it is warm."
        assert rows["check_1"].is_check and rows["check_1"].passed

    def test_refresh_shows_the_same_current_step(self, walker):
        walker.submit()  # consent
        first = walker.page()[1]
        second = walker.page()[1]
        assert first.title == second.title == "Page one"
        assert participant(walker).position == 2

    def test_a_form_for_a_later_step_cannot_skip_ahead(self, walker):
        _, form = walker.page()
        data = default_answers(form)
        data["_position"] = "3"
        response = walker.client.post(walker.url, data)
        assert response.status_code == 303
        assert response["Location"].endswith("?moved=1")
        p = participant(walker)
        assert p.position == 1
        assert not Response.objects.filter(participant=p).exists()

    def test_a_finished_step_cannot_be_answered_again(self, walker):
        walker.submit()  # consent
        _, page_one = walker.page()
        walker.submit({"colour": "Red"}, page_one)
        # The back button (or a second tab) resubmits the old page with a new answer.
        response = walker.client.post(walker.url, default_answers(page_one, {"colour": "Blue"}))
        assert response["Location"].endswith("?moved=1")
        p = participant(walker)
        assert p.position == 3
        assert Response.objects.get(participant=p, key="colour").value == "Red"
        moved = walker.client.get(response["Location"]).content.decode()
        assert "already been answered" in moved

    def test_an_invalid_form_is_shown_again_with_errors_and_stores_nothing(self, walker):
        walker.submit()
        _, form = walker.page()
        response = walker.client.post(walker.url, default_answers(form, {"colour": "Green"}))
        assert response.status_code == 200
        assert "Select a valid choice" in response.content.decode()
        p = participant(walker)
        assert p.position == 2
        assert not Response.objects.filter(participant=p, position=2).exists()

    def test_free_text_shorter_than_the_minimum_is_refused(self, walker):
        walker.walk(stop_before="Page three", answers={"Page two": {"check_1": "Disagree"}})
        _, form = walker.page()
        response = walker.client.post(walker.url, default_answers(form, {"why": "short"}))
        assert response.status_code == 200
        assert "at least 10 characters" in response.content.decode()

    def test_an_untouched_slider_is_not_an_answer(self, walker):
        walker.walk(stop_before="Page three", answers={"Page two": {"check_1": "Disagree"}})
        _, form = walker.page()
        data = default_answers(form)
        del data["warmth__touched"]  # the participant never moved it: only the start value is sent
        response = walker.client.post(walker.url, data)
        assert response.status_code == 200
        assert "Please move the slider" in response.content.decode()
        assert participant(walker).position == 4

    def test_numbers_out_of_range_are_refused(self, walker):
        walker.walk(stop_before="Page three", answers={"Page two": {"check_1": "Disagree"}})
        _, form = walker.page()
        response = walker.client.post(walker.url, default_answers(form, {"age": "7"}))
        assert response.status_code == 200
        assert participant(walker).position == 4

    def test_declining_consent_ends_with_the_no_consent_code(self, walker):
        response = walker.submit({"consent": "no"})
        assert response["Location"] == "https://app.prolific.com/submissions/complete?cc=CNOCON"
        p = participant(walker)
        assert p.status == Participant.Status.NO_CONSENT
        page = walker.client.get(walker.url).content.decode()
        assert "CNOCON" in page and "chose not to take part" in page

    def test_a_completed_participant_sees_the_code_again_on_return(self, walker):
        walker.walk(answers={"Page two": {"check_1": "Disagree"}})
        again = Client().get(
            f"/s/{walker.study.slug}/?PROLIFIC_PID={walker.pid}&STUDY_ID={'a' * 24}&SESSION_ID={'b' * 24}"
        )
        page = Client().get(again["Location"]).content.decode()
        assert "CDONE" in page and "completed the study" in page

    def test_pages_are_never_cached_and_carry_a_strict_csp(self, walker):
        response, _ = walker.page()
        assert "no-store" in response["Cache-Control"]
        assert "script-src 'self'" in response["Content-Security-Policy"]

    def test_timing_is_recorded_from_server_and_browser(self, walker):
        walker.page()
        walker.submit({"_active_ms": "12345", "_hidden_ms": "2000", "_blurs": "3"})
        visit = StepVisit.objects.get(participant=participant(walker), position=1)
        assert visit.client_active_ms == 12345
        assert visit.client_hidden_ms == 2000
        assert visit.client_blurs == 3
        assert visit.server_ms is not None and visit.server_ms >= 0
        assert visit.shown_at <= visit.submitted_at

    def test_garbage_timing_is_ignored_not_fatal(self, walker):
        walker.submit({"_active_ms": "lots", "_hidden_ms": "-5", "_blurs": ""})
        visit = StepVisit.objects.get(participant=participant(walker), position=1)
        assert visit.client_active_ms is None
        assert visit.client_hidden_ms == 0
        assert visit.client_blurs is None


@pytest.mark.django_db
class TestAttentionChecks:
    def test_one_failed_check_excludes_but_lets_the_participant_finish(self, walker):
        walker.walk(answers={"Page two": {"check_1": "Agree"}})
        p = participant(walker)
        assert p.status == Participant.Status.COMPLETED
        assert p.attention_failures == 1
        assert p.excluded
        assert Exclusion.objects.get(participant=p).reason == Exclusion.Reason.ATTENTION
        assert walker.exit_url.endswith("cc=CDONE")

    def test_reaching_the_threshold_ends_with_the_failed_check_code(self, db):
        study = build_study(
            [
                CONSENT_STEP,
                {
                    "kind": "attention_check",
                    "title": "Checks",
                    "questions": [
                        {
                            "key": f"c{n}",
                            "kind": "single_choice",
                            "text": f"Pick B ({n})",
                            "options": ["A", "B"],
                            "expected_answer": ["B"],
                        }
                        for n in (1, 2)
                    ],
                },
                DEBRIEF_STEP,
            ],
            attention_failures_to_end=2,
        )
        w = Walker(study)
        w.enter()
        w.walk(answers={"Checks": {"c1": "A", "c2": "A"}})
        assert not w.exit_url  # explained on a page of ours first, with the code and a button
        assert f'href="{PROLIFIC}CFAIL"' in w.client.get(w.url).content.decode()
        p = participant(w)
        assert p.status == Participant.Status.FAILED_CHECK
        # The answers are kept, flagged as failed checks.
        assert list(
            Response.objects.filter(participant=p, is_check=True).values_list("passed", flat=True)
        ) == [
            False,
            False,
        ]

    def test_the_threshold_is_configurable(self, db):
        study = build_study(
            [
                {
                    "kind": "attention_check",
                    "title": "Check",
                    "questions": [
                        {
                            "key": "c",
                            "kind": "single_choice",
                            "text": "Pick B",
                            "options": ["A", "B"],
                            "expected_answer": ["B"],
                        }
                    ],
                },
                DEBRIEF_STEP,
            ],
            attention_failures_to_end=1,
        )
        w = Walker(study)
        w.enter()
        w.walk(answers={"Check": {"c": "A"}})
        assert participant(w).status == Participant.Status.FAILED_CHECK
        assert f'href="{PROLIFIC}CFAIL"' in w.client.get(w.url).content.decode()
