"""Go-live checks that catch real mistakes, each said in a plain sentence: attention checks
that can never end or never exclude anyone, missing or shared exit codes, no Prolific
STUDY_ID, live debates on the offline stand-in, quotas the content cannot reach."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from debates.demo import loader
from debates.models import ConditionTarget, InstanceSet, StudyClaim, StudyDialogue
from studies.models import Question, Step, Study
from studies.services import study_problems, study_set_status, study_warnings
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study


def check_item(key: str, expected: list[str], options=("Red", "Blue", "Green")) -> dict:
    return {
        "key": key,
        "kind": "single_choice",
        "text": f"Choose {expected[0]}.",
        "options": list(options),
        "expected_answer": expected,
    }


def checks_study(*items: dict, **fields) -> Study:
    steps = [
        CONSENT_STEP,
        {"kind": "attention_check", "title": "Checks", "questions": list(items)},
        DEBRIEF_STEP,
    ]
    return build_study(steps, status="draft", **fields)


def plain(problem: str) -> bool:
    """No Python repr leaks into a message: no list brackets, no quoted reprs, no field names."""
    return not re.search(r"\['|'\]|\{|\}|_code\b|\bNone\b", problem)


@pytest.mark.django_db
class TestAttentionChecks:
    def test_a_threshold_above_the_number_of_items_is_refused_in_a_sentence(self):
        study = checks_study(check_item("c1", ["Blue"]), attention_failures_to_end=2)
        (problem,) = study_problems(study)
        assert "ended after failing 2 attention checks" in problem and "only 1 check item," in problem
        assert plain(problem)
        with pytest.raises(ValueError, match="no one can ever be ended"):
            study_set_status(study=study, status="live")
        study.refresh_from_db()
        assert study.status == "draft" and study.snapshot is None

    def test_ending_at_the_first_failure_in_a_study_of_five_minutes_or_more_is_worth_a_look(self):
        """Prolific backs a rejection for one failed check only under 5 minutes; "No problems
        found" was all the researcher read for an 8-minute study ended at the first failure (the
        researcher walk). A warning, not a stop: ending without rejecting is allowed."""
        study = checks_study(check_item("c1", ["Blue"]), attention_failures_to_end=1, estimated_minutes=8)
        assert study_problems(study) == []
        (warning,) = study_warnings(study)
        assert "first failed attention check" in warning and "takes 8 minutes" in warning
        assert "two or more failures in studies of 5 minutes or longer" in warning and plain(warning)
        for fields in ({"estimated_minutes": 4}, {"attention_failures_to_end": 2}):
            Study.objects.filter(pk=study.pk).update(
                **{"attention_failures_to_end": 1, "estimated_minutes": 8, **fields}
            )
            study.refresh_from_db()
            assert study_warnings(study) == [], fields
        no_checks = build_study(
            [CONSENT_STEP, DEBRIEF_STEP], attention_failures_to_end=1, estimated_minutes=8
        )
        assert study_warnings(no_checks) == []

    def test_enough_items_across_pages_and_pairwise_checks_pass(self):
        assert study_problems(checks_study(check_item("c1", ["Blue"]), check_item("c2", ["Red"]))) == []
        pairs = loader.pairs_study()  # two checks inside its pairwise step, threshold 2
        assert pairs.attention_failures_to_end == 2 and study_problems(pairs) == []
        Step.objects.filter(study=pairs, kind="pairwise").update(
            config={"instance_set": "demo-pairs", "per_annotator": 3, "checks": 1}
        )
        assert any("only 1 check item" in p for p in study_problems(pairs))

    def test_a_check_that_accepts_every_option_can_never_exclude(self):
        study = checks_study(check_item("c1", ["Red", "Blue", "Green"]), check_item("c2", ["Red"]))
        (problem,) = study_problems(study)
        assert (
            problem
            == 'Step 2: the attention check "c1" accepts every option as correct, so no one can fail it.'
        )

    def test_a_number_check_no_one_can_answer_is_refused_at_save_and_at_go_live(self):
        """The researcher walk: a number item of 0-10 expecting 50 was saved, and went live;
        every participant typing 50 read "Enter a whole number from 0 to 10" and failed."""
        number = {"key": "n", "kind": "number", "text": "Type 50.", "min_value": 0, "max_value": 10}
        study = checks_study({**number, "expected_answer": ["5"]}, check_item("c2", ["Red"]))
        assert study_problems(study) == []
        item = Question.objects.get(step__study=study, key="n")
        item.expected_answer = "50"
        with pytest.raises(ValidationError, match=r"Outside the item's answers \(from 0 to 10\): 50"):
            item.full_clean()
        item.save()  # as a row changed outside the admin would be
        (problem,) = study_problems(study)
        assert problem == (
            'Step 2: the attention check "n" expects 50, outside the numbers the item accepts, '
            "so everyone fails it."
        )
        slider = Question(step=item.step, key="s", kind="slider", text="Move to 101.", expected_answer="101")
        with pytest.raises(ValidationError, match=r"from 0 to 100\): 101"):
            slider.full_clean()
        open_ended = Question(step=item.step, key="o", kind="number", text="Type 500.", expected_answer="500")
        open_ended.full_clean()  # no bounds: any whole number can be typed

    def test_screening_groups_no_score_can_reach_are_named(self):
        """The researcher walk: groups of 6-9 and 0-0.5 on 1-5 Likert items went live with "No
        problems found"; every participant would have been screened out."""
        study = loader.claim_study()
        assert study_problems(study) == []
        step = Step.objects.get(study=study, kind="screening")
        step.config = {**step.config, "groups": "mainstream: 6 - 9\nskeptical: 0 - 0.5"}
        step.save()
        problems = study_problems(study)
        position = step.position
        assert problems == [
            f'Step {position}: the screening group "mainstream" (6 to 9) is outside the scores participants '
            "can have (1 to 5), so no one is placed in it.",
            f'Step {position}: the screening group "skeptical" (0 to 0.5) is outside the scores participants '
            "can have (1 to 5), so no one is placed in it.",
            f"Step {position}: no screening group can be reached, so every participant would be "
            "screened out.",
        ]
        step.config = {**step.config, "groups": "mainstream: 1 - 3\nskeptical: 3.1 - 7"}
        step.save()
        assert study_problems(study) == []  # reaching past the top is harmless


@pytest.mark.django_db
class TestCodesAndProlific:
    def test_missing_and_shared_codes_are_named(self):
        study = checks_study(check_item("c1", ["Blue"]), check_item("c2", ["Red"]))
        Study.objects.filter(pk=study.pk).update(no_consent_code="", screened_out_code="CDONE")
        study.refresh_from_db()
        problems = study_problems(study)
        assert "The study has no no-consent code." in problems
        assert any(
            p.startswith("The completion code and the screened-out code are the same (CDONE)")
            for p in problems
        )
        assert all(plain(p) for p in problems)

    def test_no_study_id_is_refused_unless_the_study_is_a_pilot(self):
        study = checks_study(check_item("c1", ["Blue"]), check_item("c2", ["Red"]), prolific_study_id="")
        (problem,) = study_problems(study)
        assert "STUDY_ID is not set, so links carrying any STUDY_ID are accepted" in problem
        Study.objects.filter(pk=study.pk).update(pilot=True)
        study.refresh_from_db()
        assert study_problems(study) == []
        study_set_status(study=study, status="live")
        assert study.snapshot["study"]["pilot"] is True  # a pilot is marked as such in its record


@pytest.mark.django_db
class TestDesigns:
    def test_the_demo_studies_pass_honestly(self):
        studies = loader.load_all().studies
        assert len(studies) == 5
        for study in studies:
            assert study.pilot and study.status == "live" and study_problems(study) == [], study.slug
            assert study_warnings(study) == [], study.slug

    def test_reading_a_debate_without_a_reading_speed_cap_is_worth_a_look(self, mystery_study):
        """A judge at 7,400 words per minute was analysed, with nothing before going live saying
        no cap was set (the researcher walk)."""
        assert mystery_study.wpm_cap and study_warnings(mystery_study) == []
        Study.objects.filter(pk=mystery_study.pk).update(wpm_cap=None)
        mystery_study.refresh_from_db()
        (warning,) = study_warnings(mystery_study)
        position = Step.objects.get(study=mystery_study, kind="dialogue").position
        assert warning.startswith(f"Step {position}: no reading-speed cap is set") and plain(warning)
        assert study_problems(mystery_study) == []  # not a stop

    def test_a_live_debate_on_the_offline_model_needs_a_pilot(self, claim_study):
        Study.objects.filter(pk=claim_study.pk).update(pilot=False, prolific_study_id="a" * 24)
        claim_study.refresh_from_db()
        problems = study_problems(claim_study)
        assert len(problems) == 2  # once per claim step
        assert all("offline stand-in" in p and "mark the study as a pilot" in p for p in problems)
        with override_settings(LLM_BACKEND="openai"):
            assert study_problems(claim_study) == []

    def test_more_claim_steps_than_claims_is_refused(self, claim_study):
        keep = StudyClaim.objects.filter(study=claim_study).order_by("pk").first()
        StudyClaim.objects.filter(study=claim_study).exclude(pk=keep.pk).update(active=False)
        problems = study_problems(claim_study)
        assert problems == [
            "Step 5: the study has 2 claim steps but only 1 active claims, and each participant needs a "
            "different claim in each step."
        ]

    def test_condition_targets_beyond_the_dialogues_are_refused(self, mystery_study):
        assert study_problems(mystery_study) == []
        slots = StudyDialogue.objects.filter(study=mystery_study, dialogue__condition="baseline")
        ConditionTarget.objects.create(study=mystery_study, condition="baseline", target=10)
        slots.update(target=2)
        problems = study_problems(mystery_study)
        assert (
            len(problems) == 1
            and "has a target of 10, but its dialogues' own targets add up to" in problems[0]
        )
        slots.update(target=None)
        assert study_problems(mystery_study) == []
        slots.update(active=False)
        (problem,) = study_problems(mystery_study)
        assert "has a target of 10 but no active dialogue" in problem

    def test_more_comparisons_per_annotator_than_instances_is_refused(self, pairs_study):
        count = InstanceSet.objects.get(slug="demo-pairs").instances.count()
        Step.objects.filter(study=pairs_study, kind="pairwise").update(
            config={"instance_set": "demo-pairs", "per_annotator": count + 1, "checks": 2}
        )
        (problem,) = study_problems(pairs_study)
        assert problem.endswith(
            f'is to compare {count + 1} instances, but the instance set "demo-pairs" has only {count}.'
        )
