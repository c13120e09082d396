"""Reviewing a study's submissions on Prolific: approve, bulk-approve, reject (with the message
and category Prolific requires, and its rules for researchers checked first), and bonuses,
recorded before they are sent and never sent twice, even after a crash or a double click
(docs/decisions.md, "Prolific API"). Prolific is reached only through `participants.prolific`."""

from __future__ import annotations

import logging
import math
import re
import statistics
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from participants.models import Bonus, Participant, ProlificSubmission
from participants.prolific import Client, ProlificError, client, short, submission_seen
from studies.models import Study

log = logging.getLogger(__name__)
Status = Participant.Status
SubmissionStatus = ProlificSubmission.Status
REJECTION_CATEGORIES = {
    "TOO_QUICKLY": "Completed too quickly (exceptionally fast)",
    "TOO_SLOWLY": "Completed too slowly",
    "FAILED_INSTRUCTIONS": "Did not follow the instructions",
    "INCOMP_LONGITUDINAL": "Did not complete a longitudinal study",
    "FAILED_CHECK": "Failed attention checks",
    "LOW_EFFORT": "Low effort",
    "MALINGERING": "Malingering",
    "NO_CODE": "No completion code",
    "BAD_CODE": "Wrong completion code",
    "NO_DATA": "No data",
    "UNSUPP_DEVICE": "Unsupported device",
    "OTHER": "Other",
}
MIN_REJECTION_MESSAGE = 100  # characters Prolific requires in a rejection's message


# --- Review: approve, reject ----------------------------------------------------------------


def reject_problems(*, submission: ProlificSubmission, message: str, category: str) -> list[str]:
    """Why Prolific (or its rules for researchers) would refuse this rejection, in sentences."""
    problems = []
    if category not in REJECTION_CATEGORIES:
        problems.append(
            "Choose a rejection category: Prolific requires one (" + ", ".join(REJECTION_CATEGORIES) + ")."
        )
    length = len(message.strip())
    if length < MIN_REJECTION_MESSAGE:
        problems.append(
            f"Write the participant a message of at least {MIN_REJECTION_MESSAGE} characters saying why: "
            f"Prolific requires it (this one has {length})."
        )
    if submission.status != SubmissionStatus.AWAITING_REVIEW:
        problems.append(
            "Only a submission awaiting review can be rejected; "
            f"this one is {submission.get_status_display()}."
        )
    participant = submission.participant
    study = submission.study
    needed = 1 if study.estimated_minutes < 5 else 2  # Prolific: one under 5 minutes, else two or more
    if category == "FAILED_CHECK" and participant is not None and participant.attention_failures < needed:
        after = "one failure" if needed == 1 else "two failures or more"
        problems.append(
            "Prolific allows a rejection for failed attention checks in a study of "
            f"{study.estimated_minutes} minutes only after {after}; this participant failed "
            f"{participant.attention_failures}."
        )
    if category == "TOO_QUICKLY":
        problems += _too_quick_problems(participant, study)
    return problems


def _too_quick_problems(participant: Participant | None, study: Study) -> list[str]:
    """Prolific allows a rejection for speed only for an exceptionally fast submission: about 3
    standard deviations below the mean time (a slow page or a reading speed is an exclusion)."""
    if participant is None or participant.finished_at is None:
        return ["Rostrum has no completion time for this participant, so speed cannot be shown."]
    done = Participant.objects.filter(
        study=study, status=Status.COMPLETED, is_preview=False, is_pilot=False, finished_at__isnull=False
    ).values_list("started_at", "finished_at")
    minutes = [(end - start).total_seconds() / 60 for start, end in done]
    if len(minutes) < 5:
        return ["Too few completions to tell an exceptionally fast one (Prolific: 3 SD below the mean)."]
    bound = statistics.mean(minutes) - 3 * statistics.stdev(minutes)
    took = (participant.finished_at - participant.started_at).total_seconds() / 60
    if took >= bound:
        return [
            "Prolific allows a rejection for speed only 3 standard deviations below the mean time "
            f"(here under {max(bound, 0):.1f} min); this one took {took:.1f} min: exclude it instead."
        ]
    return []


def submission_reject(
    *, submission: ProlificSubmission, message: str, category: str, by=None, api: Client | None = None
) -> ProlificSubmission:
    """Reject on Prolific with the message and category it requires (checked here first, with
    Prolific's rules for researchers), then free the place as the sync would."""
    problems = reject_problems(submission=submission, message=message, category=category)
    if problems:
        raise ValidationError(problems)
    (api or client()).submission_transition(
        submission.submission_id, "REJECT", message=message.strip(), rejection_category=category
    )
    ProlificSubmission.objects.filter(pk=submission.pk).update(
        rejection_category=category,
        rejection_message=message.strip(),
        reviewed_at=timezone.now(),
        reviewed_by=by,
    )
    submission.rejection_category = category
    data = {"id": submission.submission_id, "participant_id": submission.prolific_pid, "status": "REJECTED"}
    row, _ = submission_seen(study=submission.study, data=data, category=category)
    return row


def submission_approve(
    *, submissions: list[ProlificSubmission], by=None, api: Client | None = None
) -> list[ProlificSubmission]:
    """Approve submissions awaiting review (several at once through bulk approve). Any other is
    refused, with a sentence naming it."""
    waiting = [s for s in submissions if s.status == SubmissionStatus.AWAITING_REVIEW]
    others = [s for s in submissions if s.status != SubmissionStatus.AWAITING_REVIEW]
    if others:
        names = ", ".join(f"{s.prolific_pid} ({s.get_status_display()})" for s in others[:5])
        raise ValidationError(f"Only submissions awaiting review can be approved, not: {names}.")
    if not waiting:
        return []
    api = api or client()
    if len(waiting) == 1:
        api.submission_transition(waiting[0].submission_id, "APPROVE")
    else:
        api.bulk_approve(waiting[0].study.prolific_study_id, [s.submission_id for s in waiting])
    ids = [s.pk for s in waiting]
    ProlificSubmission.objects.filter(pk__in=ids).update(
        status=SubmissionStatus.APPROVED, reviewed_at=timezone.now(), reviewed_by=by
    )
    return list(ProlificSubmission.objects.filter(pk__in=ids))


# --- Bonuses: recorded before sent, never sent twice ----------------------------------------


def bonus_reason(text: str) -> str:
    """A reason as it is kept and compared: spaces collapsed, at most 200 characters."""
    return " ".join((text or "").split())[:200]


def bonus_record(
    *, participant: Participant, amount_cents: int, reason: str = "", key: str, by=None
) -> Bonus:
    """Record a bonus (not sent yet). One bonus per participant and reason (compared without
    regard to case or spacing; no reason is a reason too): a second tab, or a second form, for the
    same participant and reason records nothing and is told so, whatever its amount; a different
    reason is a different bonus. `key` comes with the form: the same form sent twice (a double
    click) returns the bonus it recorded.

    The check runs inside the transaction that creates the bonus, under a lock on the participant's
    row (PostgreSQL: SELECT … FOR UPDATE; SQLite: the IMMEDIATE transaction's write lock), so two
    requests at once cannot both find no bonus and both record one (docs/decisions.md)."""
    if amount_cents < 1:
        raise ValidationError("A bonus is at least 1 cent.")
    if amount_cents > settings.PROLIFIC_BONUS_MAX_CENTS:
        raise ValidationError(
            f"A bonus is at most {settings.PROLIFIC_BONUS_MAX_CENTS / 100:.2f} (PROLIFIC_BONUS_MAX_CENTS)."
        )
    submission = ProlificSubmission.objects.filter(participant=participant).order_by("-seen_at").first()
    submission_id = submission.submission_id if submission else participant.prolific_session_id
    if not submission_id or not participant.study.prolific_study_id:
        raise ValidationError(f"{participant.prolific_pid} has no submission on Prolific to pay a bonus to.")
    reason = bonus_reason(reason)
    with transaction.atomic():
        Participant.objects.select_for_update().filter(pk=participant.pk).first()
        same_form = Bonus.objects.filter(request_key=key[:100]).first()
        if same_form is not None:
            if same_form.participant_id != participant.pk:
                raise ValidationError("That form's key belongs to another bonus: reload the page.")
            return same_form  # the same form sent again: nothing new
        earlier = Bonus.objects.filter(participant=participant, reason__iexact=reason).first()
        if earlier is not None:
            raise ValidationError(_already(participant, earlier))
        return Bonus.objects.create(
            study_id=participant.study_id,
            participant=participant,
            submission_id=submission_id,
            amount_cents=amount_cents,
            reason=reason,
            request_key=key[:100],
            created_at=timezone.now(),
            created_by=by,
        )


def _already(participant: Participant, bonus: Bonus) -> str:
    why = f"for “{bonus.reason}”" if bonus.reason else "without a reason"
    return (
        f"{participant.prolific_pid} already has a bonus {why} ({bonus.amount_cents / 100:.2f}, "
        f"{bonus.get_state_display().lower()}), perhaps from another tab: nothing more was recorded. "
        "A further bonus needs its own reason."
    )


class BonusBusy(Exception):
    """Another bonus of the same participant is being sent: try again when it is settled."""


def bonus_send(*, bonus: Bonus, api: Client | None = None) -> Bonus:
    """Send a recorded bonus, at most once.

    The bonus is claimed (recorded → sending) by a conditional UPDATE committed before Prolific is
    called: a second click, tab or worker finds it claimed and sends nothing. Before paying, the
    submission's count of bonus payments on Prolific, the bulk payment's id and the moment the pay
    call starts are committed too, so that a bonus left in "sending" can be settled by looking at
    Prolific's side (`bonus_resolve`) instead of paying again."""
    if connection.in_atomic_block:
        raise RuntimeError("bonus_send must run outside a transaction: its claim must be committed first")
    now = timezone.now()
    try:
        claimed = Bonus.objects.filter(pk=bonus.pk, state=Bonus.State.RECORDED).update(
            state=Bonus.State.SENDING, sending_at=now, attempts=F("attempts") + 1, error=""
        )
    except IntegrityError:
        raise BonusBusy(f"Another bonus of {bonus.participant.prolific_pid} is being sent.") from None
    bonus.refresh_from_db()
    if not claimed:
        return bonus  # sending, sent or failed already: nothing is sent again
    mine = Bonus.objects.filter(pk=bonus.pk, state=Bonus.State.SENDING)
    try:
        api = api or client()
        before = len(api.submission(bonus.submission_id).get("bonus_payments") or [])
        if not bonus.bulk_id:
            rows = [(bonus.participant.prolific_pid, bonus.amount_cents)]
            mine.update(bulk_id=str(api.bonus_setup(bonus.study.prolific_study_id, rows)["id"]))
        mine.update(payments_before=before)
        bonus.refresh_from_db()
        mine.update(pay_started_at=timezone.now())
        api.bonus_pay(bonus.bulk_id)
    except ProlificError as error:
        if error.maybe_done and Bonus.objects.filter(pk=bonus.pk, pay_started_at__isnull=False).exists():
            mine.update(error=short(f"outcome unknown, to be checked on Prolific: {error}", 300))
        else:
            mine.update(state=Bonus.State.FAILED, error=short(str(error), 300), pay_started_at=None)
        bonus.refresh_from_db()
        return bonus
    mine.update(state=Bonus.State.SENT, sent_at=timezone.now(), error="")
    bonus.refresh_from_db()
    return bonus


def bonus_resolve(*, bonus: Bonus, api: Client | None = None, now: datetime | None = None) -> Bonus:
    """Settle a bonus left in "sending" by looking at Prolific's side, never by paying again:
    - the pay call was never made (no `pay_started_at`): failed, safe to send again;
    - the submission on Prolific has a new bonus payment of this amount: sent;
    - otherwise it stays "sending" for PROLIFIC_BONUS_SETTLE_MINUTES (Prolific pays
      asynchronously, within minutes), then is failed: not paid, safe to send again."""
    now = now or timezone.now()
    mine = Bonus.objects.filter(pk=bonus.pk, state=Bonus.State.SENDING)
    bonus.refresh_from_db()
    if bonus.state != Bonus.State.SENDING:
        return bonus
    if bonus.pay_started_at is None or bonus.payments_before is None:
        mine.update(state=Bonus.State.FAILED, error="The pay call was never made: not paid.")
    else:
        payments = (api or client()).submission(bonus.submission_id).get("bonus_payments") or []
        if bonus.amount_cents in payments[bonus.payments_before :]:
            mine.update(state=Bonus.State.SENT, sent_at=now, error="")
        elif bonus.pay_started_at <= now - timedelta(minutes=settings.PROLIFIC_BONUS_SETTLE_MINUTES):
            mine.update(
                state=Bonus.State.FAILED,
                pay_started_at=None,
                error=f"Not on Prolific {settings.PROLIFIC_BONUS_SETTLE_MINUTES} minutes after the pay call: "
                "not paid.",
            )
    bonus.refresh_from_db()
    return bonus


def bonuses_settle(*, api: Client | None = None, now: datetime | None = None) -> int:
    """Periodic (Celery beat): settle bonuses left in "sending" for a minute or more (a crash, a
    lost answer) by looking at Prolific's side. Returns how many were settled."""
    if not settings.PROLIFIC_API_TOKEN:
        return 0
    now = now or timezone.now()
    settled = 0
    for bonus in Bonus.objects.filter(state=Bonus.State.SENDING, sending_at__lte=now - timedelta(minutes=1)):
        try:
            settled += bonus_resolve(bonus=bonus, api=api, now=now).state != Bonus.State.SENDING
        except ProlificError as error:
            log.warning("Checking bonus %s on Prolific failed: %s", bonus.pk, error)
    return settled


def bonus_retry(*, bonus: Bonus, api: Client | None = None) -> Bonus:
    """Send a failed bonus again (a failed bonus is known not to have been paid)."""
    Bonus.objects.filter(pk=bonus.pk, state=Bonus.State.FAILED).update(state=Bonus.State.RECORDED)
    bonus.refresh_from_db()
    return bonus_send(bonus=bonus, api=api)


def amount_cents(text: str) -> int:
    """'1.50' → 150 (an amount as the experimenter types it, in the study's currency)."""
    match = re.fullmatch(r"\s*(\d{1,6})(?:[.,](\d{1,2}))?\s*", text or "")
    if not match:
        raise ValidationError(f"Not an amount: {text!r} (write it like 1.50).")
    return int(match[1]) * 100 + int((match[2] or "0").ljust(2, "0"))


def minutes(participant: Participant) -> float | None:
    """Time from the study link to the end, in minutes."""
    if participant.finished_at is None:
        return None
    return math.floor((participant.finished_at - participant.started_at).total_seconds() / 6) / 10
