"""Reviewing submissions on our fake Prolific: approve one, bulk-approve several, reject with the
message and category Prolific requires. What Prolific (or its rules for researchers) would refuse
is refused here first, with a clear sentence, and nothing is sent."""

import pytest
from django.core.exceptions import ValidationError

from devtools.fakeprolific import FakeProlific
from participants import prolific, prolific_review
from participants.models import Participant, ProlificSubmission
from tests.participants.prolific_support import (  # noqa: F401
    fake_fixture,
    on_prolific,
    participant_of,
    prolific_server_fixture,
    submission_of,
)
from tests.support.cast import Walker

A_REASON = (
    "Your answers to the two attention checks on page two did not follow their instructions, "
    "and the study stated that such submissions would be rejected."
)
PASSED = {"Page two": {"check_1": "Disagree"}}


def submitted(fake: FakeProlific, study, answers=PASSED) -> Walker:
    """A participant who completed the study and submitted on Prolific (awaiting review)."""
    walker = on_prolific(fake, study)
    walker.walk(answers=answers)
    fake.submission_set(submission_of(fake, walker)["id"], "AWAITING_REVIEW", entered_code="CDONE")
    return walker


def row(walker: Walker) -> ProlificSubmission:
    return ProlificSubmission.objects.select_related("study", "participant").get(
        participant=participant_of(walker)
    )


def transitions(fake: FakeProlific) -> list[str]:
    return [
        path
        for method, path in fake.requests
        if method == "POST" and ("approve" in path or "transition" in path)
    ]


@pytest.mark.django_db
class TestApproving:
    def test_one_submission_is_approved(self, fake: FakeProlific, questionnaire_study):
        walker = submitted(fake, questionnaire_study)
        prolific.prolific_sync(study=questionnaire_study)
        prolific_review.submission_approve(submissions=[row(walker)])
        assert submission_of(fake, walker)["status"] == "APPROVED" and row(walker).status == "APPROVED"

    def test_several_are_approved_at_once(self, fake: FakeProlific, questionnaire_study):
        walkers = [submitted(fake, questionnaire_study) for _ in range(3)]
        prolific.prolific_sync(study=questionnaire_study)
        prolific_review.submission_approve(submissions=[row(w) for w in walkers])
        assert all(submission_of(fake, w)["status"] == "APPROVED" for w in walkers)
        assert ("POST", "/submissions/bulk-approve/") in fake.requests

    def test_a_submission_not_awaiting_review_is_not_approved(self, fake: FakeProlific, questionnaire_study):
        walker = on_prolific(fake, questionnaire_study, steps=1)
        prolific.prolific_sync(study=questionnaire_study)
        with pytest.raises(ValidationError, match="Only submissions awaiting review can be approved"):
            prolific_review.submission_approve(submissions=[row(walker)])
        assert transitions(fake) == []


@pytest.mark.django_db
class TestRejecting:
    def test_a_rejection_is_sent_with_its_message_and_category(self, fake: FakeProlific, questionnaire_study):
        failed_both = {"Page two": {"check_1": "Agree", "check_2": "Blue"}}
        walker = submitted(fake, questionnaire_study, answers=failed_both)  # ended with the failed-check code
        prolific.prolific_sync(study=questionnaire_study)
        assert participant_of(walker).attention_failures == 2
        prolific_review.submission_reject(submission=row(walker), message=A_REASON, category="FAILED_CHECK")
        sent = submission_of(fake, walker)
        assert sent["status"] == "REJECTED"
        assert row(walker).status == "REJECTED" and row(walker).rejection_message == A_REASON

    def test_a_completed_participant_rejected_is_excluded_so_their_place_reopens(
        self, fake: FakeProlific, questionnaire_study
    ):
        walker = submitted(fake, questionnaire_study)
        prolific.prolific_sync(study=questionnaire_study)
        prolific_review.submission_reject(submission=row(walker), message=A_REASON, category="LOW_EFFORT")
        participant = participant_of(walker)
        assert participant.status == Participant.Status.COMPLETED and participant.excluded
        assert participant.exclusions.get().detail == "Rejected on Prolific (LOW_EFFORT)"

    def test_a_message_too_short_is_refused_and_nothing_is_sent(
        self, fake: FakeProlific, questionnaire_study
    ):
        walker = submitted(fake, questionnaire_study)
        prolific.prolific_sync(study=questionnaire_study)
        with pytest.raises(ValidationError) as error:
            prolific_review.submission_reject(
                submission=row(walker), message="Too fast.", category="LOW_EFFORT"
            )
        assert error.value.messages == [
            "Write the participant a message of at least 100 characters saying why: Prolific requires it "
            "(this one has 9)."
        ]
        assert transitions(fake) == [] and row(walker).status == "AWAITING_REVIEW"

    def test_a_missing_category_is_refused_and_nothing_is_sent(self, fake: FakeProlific, questionnaire_study):
        walker = submitted(fake, questionnaire_study)
        prolific.prolific_sync(study=questionnaire_study)
        with pytest.raises(ValidationError) as error:
            prolific_review.submission_reject(submission=row(walker), message=A_REASON, category="")
        assert error.value.messages[0].startswith(
            "Choose a rejection category: Prolific requires one (TOO_QUICKLY"
        )
        assert transitions(fake) == []

    def test_failed_checks_are_a_reason_only_after_two_failures_in_a_long_study(
        self, fake: FakeProlific, questionnaire_study
    ):
        walker = submitted(
            fake, questionnaire_study, answers={"Page two": {"check_1": "Agree"}}
        )  # one failure
        prolific.prolific_sync(study=questionnaire_study)
        with pytest.raises(
            ValidationError, match="only after two failures or more; this participant failed 1"
        ):
            prolific_review.submission_reject(
                submission=row(walker), message=A_REASON, category="FAILED_CHECK"
            )
        assert transitions(fake) == []

    def test_speed_is_a_reason_only_for_an_exceptionally_fast_submission(
        self, fake: FakeProlific, questionnaire_study
    ):
        walker = submitted(fake, questionnaire_study)
        prolific.prolific_sync(study=questionnaire_study)
        with pytest.raises(ValidationError, match="Too few completions"):
            prolific_review.submission_reject(
                submission=row(walker), message=A_REASON, category="TOO_QUICKLY"
            )

    def test_prolific_refusing_a_rejection_is_a_clear_error(self, fake: FakeProlific, questionnaire_study):
        walker = submitted(fake, questionnaire_study)
        prolific.prolific_sync(study=questionnaire_study)
        fake.submission_set(
            submission_of(fake, walker)["id"], "APPROVED"
        )  # approved on Prolific's site meanwhile
        with pytest.raises(prolific.ProlificError) as error:
            prolific_review.submission_reject(submission=row(walker), message=A_REASON, category="LOW_EFFORT")
        assert error.value.kind == "invalid" and "cannot be reviewed" in error.value.message
        assert not participant_of(walker).excluded
