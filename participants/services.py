"""The participant flow engine: entry, the current step, submissions, exits, exclusions.

Services are the only code that writes. The engine reaches step kinds only through
`studies.registry`; kinds call back into `responses_record()` and friends to store answers.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from common import limits
from common.compiled import CompiledQuery
from common.statements import Statement
from participants import flags
from participants.models import Exclusion, Participant, Response, StepVisit
from participants.places import lease_minutes, may_take_place, place_held, places_kept
from studies import registry
from studies.models import Step, Study
from studies.registry import StepContext, StepKind, StepOutcome, StepUnavailable
from studies.services import study_cached, study_lock, study_steps

Status = Participant.Status
PROLIFIC_ID = re.compile(r"^[0-9a-f]{24}$")
LOOSE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ENDED_BY_KIND = {Status.NO_CONSENT, Status.FAILED_CHECK, Status.SCREENED_OUT, Status.STUDY_FULL}
SUBMITTED = {Status.COMPLETED} | ENDED_BY_KIND  # given a code to enter on Prolific
# Pilots: a study link with `pilot=<token>` makes a pilot participant (`manage.py pilot`).
PILOT_PARAM = "pilot"
PILOT_SALT = "rostrum.participants.pilot"
PILOT_TOKEN_MAX_AGE = 24 * 3600  # seconds: longer than any pilot run
PILOT_STUDY_STATUSES = {Study.Status.DRAFT, Study.Status.LIVE}  # what a pilot may enter
# Shown to participants in their language (the entry's language is active when shown).
INVALID_LINK = gettext_lazy("This link is not valid. Please open the study again from Prolific.")
TOO_FAST = gettext_lazy(
    "Many people are starting this study from your connection right now. Please wait a minute, "
    "then reload this page."
)


class EntryError(Exception):
    """The study link cannot start a participant; the message is shown to the visitor."""


class Throttled(EntryError):
    """Too many entries or places from one client address: wait `retry_after` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(TOO_FAST)
        self.retry_after = retry_after


class StaleSubmission(Exception):
    """A form for a step that is no longer the participant's current step."""


# --- Entry -------------------------------------------------------------------------------


def entry_params(query: dict, *, study: Study) -> tuple[str, str, str]:
    """Validate PROLIFIC_PID, STUDY_ID and SESSION_ID from the study link."""
    pattern = PROLIFIC_ID if settings.PROLIFIC_STRICT_IDS else LOOSE_ID
    values = {}
    for name in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"):
        raw = (query.get(name) or "").strip()
        value = raw.lower() if settings.PROLIFIC_STRICT_IDS else raw
        if not raw:
            raise EntryError(
                _("The link is missing %(name)s. Please open the study from Prolific.") % {"name": name}
            )
        if not pattern.match(value):
            raise EntryError(
                _(
                    "The link's %(name)s does not look like a Prolific id. "
                    "Please open the study again from Prolific."
                )
                % {"name": name}
            )
        values[name] = value
    if study.prolific_study_id and values["STUDY_ID"] != study.prolific_study_id.lower():
        raise EntryError(_("This link belongs to a different Prolific study."))
    # Prolific gives every participant, study and submission an id of its own.
    if study.prolific_study_id and values["SESSION_ID"] in (values["PROLIFIC_PID"], values["STUDY_ID"]):
        raise EntryError(INVALID_LINK)
    return values["PROLIFIC_PID"], values["STUDY_ID"], values["SESSION_ID"]


def entry_throttle(*, study: Study, client: str) -> None:
    """Count a study-link entry from the client address `client`; past ENTRY_RATE_LIMITS raise
    Throttled (and count the refusal for the overview's alert)."""
    wait = limits.rate_hit("entry", client, settings.ENTRY_RATE_LIMITS)
    if wait:
        flags.refusal_count(study_id=study.pk)
        raise Throttled(wait)


def pilot_token(study: Study) -> str:
    """The study link's `pilot` value that makes a pilot participant of `study`: signed with
    SECRET_KEY (so only someone holding it, the `pilot` command, can make one), bound to the
    study, valid for PILOT_TOKEN_MAX_AGE."""
    return signing.TimestampSigner(salt=PILOT_SALT).sign(f"{study.pk}:{study.slug}")


def entry_pilot(query: dict, *, study: Study) -> bool:
    """Whether the link makes a pilot participant: no `pilot` value, no; a valid token of this
    study, yes; anything else (forged, tampered, another study's, expired) is refused."""
    value = (query.get(PILOT_PARAM) or "").strip()
    if not value:
        return False
    try:
        signed = signing.TimestampSigner(salt=PILOT_SALT).unsign(value, max_age=PILOT_TOKEN_MAX_AGE)
    except signing.BadSignature:  # SignatureExpired included
        raise EntryError(INVALID_LINK) from None
    if signed != f"{study.pk}:{study.slug}":
        raise EntryError(INVALID_LINK)
    return True


def participant_enter(
    *,
    study: Study,
    prolific_pid: str,
    prolific_study_id: str = "",
    prolific_session_id: str = "",
    user_agent: str = "",
    is_pilot: bool = False,
) -> Participant:
    """Create the participant for (study, PROLIFIC_PID), or resume the existing one.

    Concurrent first visits (double clicks, two tabs) race on the unique constraint; the
    loser reads the winner's row, so there is never a second participant per PID.
    A pilot (`is_pilot`, from a valid pilot token) may also enter a draft study, and never
    marks the study as entered by a real participant (so it stays editable).
    """
    now = timezone.now()
    existing = _participant_where(study_id=study.pk, prolific_pid=prolific_pid)
    if existing is not None:  # those already in may come back even to a paused study
        if existing.is_pilot != is_pilot:  # a pilot link never resumes a real participant
            raise EntryError(INVALID_LINK)
        return _participant_revisit(existing, prolific_session_id, now)
    allowed = PILOT_STUDY_STATUSES if is_pilot else {Study.Status.LIVE}
    if study.status not in allowed:
        raise EntryError(_("This study is not accepting participants at the moment."))
    if study.prolific_study_id and not is_pilot and _session_taken(study, prolific_session_id):
        raise EntryError(INVALID_LINK)  # one Prolific submission is one participant's
    try:
        with transaction.atomic():
            participant = _ENTERED.insert_new(  # one fixed statement, not the ORM's save (issue #12)
                Participant(
                    study=study,
                    prolific_pid=prolific_pid,
                    prolific_study_id=prolific_study_id,
                    prolific_session_id=prolific_session_id,
                    started_at=now,
                    last_seen_at=now,
                    shown_at=now,
                    expires_at=now + timedelta(minutes=lease_minutes(study)),
                    user_agent=user_agent[:300],
                    is_pilot=is_pilot,
                )
            )
            from participants.prolific_groups import participant_admit  # it imports this module

            participant_admit(participant=participant)  # sister studies refused; screening carried over
    except IntegrityError:
        existing = Participant.objects.get(study=study, prolific_pid=prolific_pid)
        if existing.is_pilot != is_pilot:
            raise EntryError(INVALID_LINK) from None
        return _participant_revisit(existing, prolific_session_id, now)
    if not is_pilot:
        study_lock(study=study)
    return participant


def _session_taken(study: Study | int, session_id: str) -> bool:
    return (
        bool(session_id) and Participant.objects.filter(study=study, prolific_session_id=session_id).exists()
    )


def _participant_revisit(participant: Participant, session_id: str, now: datetime) -> Participant:
    changes = {"visits": F("visits") + 1, "last_seen_at": now}
    if (
        session_id
        and session_id != participant.prolific_session_id
        and participant.status not in SUBMITTED
        and not _session_taken(participant.study_id, session_id)
    ):
        # A new submission after a return. One that ended with a code keeps the SESSION_ID it
        # ended under: that submission is the one Prolific reviews (a stray visit after it, with
        # another SESSION_ID, overwrote it, and the review lost its submission); and a SESSION_ID
        # another participant holds stays theirs (one submission is one participant's).
        changes["prolific_session_id"] = session_id
    Participant.objects.filter(pk=participant.pk).update(**changes)
    return participant


def participant_preview(*, study: Study) -> Participant:
    """A throw-away participant for the experimenter; never counted nor exported."""
    now = timezone.now()
    return Participant.objects.create(
        study=study,
        prolific_pid=f"preview-{secrets.token_hex(8)}",
        is_preview=True,
        started_at=now,
        last_seen_at=now,
        expires_at=now + timedelta(days=1),
    )


TOKEN_SHAPE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # secrets.token_urlsafe's alphabet


def participant_by_token(token: str) -> Participant | None:
    """The participant with this token (None for a token of another shape: a NUL in it was a
    database error, a 500)."""
    if not token or not TOKEN_SHAPE.match(token):
        return None
    participant = _participant_with_token(token)
    if participant is None:
        return None
    # Previews see a step's new configuration at once; participants share a cached study.
    study = Study.objects.get(pk=participant.study_id) if participant.is_preview else None
    participant.study = study or study_cached(pk=participant.study_id)
    return participant


def _participant_with_token(token: str) -> Participant | None:
    return _BY_TOKEN.one(token=token)


def _participant_where(*, study_id: int, prolific_pid: str) -> Participant | None:
    return _BY_PID.one(study_id=study_id, prolific_pid=prolific_pid)


# Every participant request starts with the token lookup, every arrival with (study,
# PROLIFIC_PID): compiled once per connection (common.compiled; compiling the query of a
# 24-column row cost the server three times running it, bench/arrivals).
_BY_TOKEN = CompiledQuery(lambda *, token: Participant.objects.filter(token=token).order_by())
_BY_PID = CompiledQuery(
    lambda *, study_id, prolific_pid: Participant.objects.filter(
        study_id=study_id, prolific_pid=prolific_pid
    ).order_by()
)


# --- The current step --------------------------------------------------------------------


def participant_current_step(participant: Participant) -> Step | None:
    steps = study_steps(participant.study)
    index = participant.position - 1
    return steps[index] if 0 <= index < len(steps) else None


def step_context(participant: Participant, step: Step, now: datetime | None = None) -> StepContext:
    return StepContext(
        participant=participant,
        step=step,
        study=participant.study,
        steps=study_steps(participant.study),
        now=now or timezone.now(),
    )


def participant_resume(*, participant: Participant, now: datetime | None = None) -> Participant:
    """Bring back a participant whose time limit passed, if their place is still theirs."""
    now = now or timezone.now()
    expired = participant.status == Status.TIMED_OUT or (
        participant.status == Status.ACTIVE and participant.expires_at <= now
    )
    if not expired or participant.is_preview:
        return participant
    with transaction.atomic():
        if participant.is_pilot or places_kept(participant, now):  # a pilot holds no place to lose
            expires = now + _lease(participant)
            Participant.objects.filter(pk=participant.pk).update(
                status=Status.ACTIVE, expires_at=expires, finished_at=None
            )
            participant.status, participant.expires_at, participant.finished_at = (
                Status.ACTIVE,
                expires,
                None,
            )
        elif participant.status == Status.ACTIVE:
            participant_finish(participant=participant, status=Status.TIMED_OUT, now=now)
    return participant


def step_shown(*, participant: Participant, now: datetime | None = None) -> None:
    """Record that the current page was served (a GET of it): the first time since the last
    accepted submission, one write; refreshes write nothing. Also make sure the current step
    has a start time: entering and advancing set it, so only older rows lack one."""
    now = now or timezone.now()
    where = (participant.pk, participant.position)
    if participant.served_at is None:
        _SERVED.update([now], where)
        participant.served_at = now
    if participant.shown_at is None:
        _SHOWN.update([now, now], where)
        participant.shown_at = now


# The writes of every page served and answered, as fixed statements (common.statements).
_ENTERED = Statement.every_column(Participant)
_SERVED = Statement(Participant, sets=["served_at"], where=["pk", "position"], where_null=["served_at"])
_SHOWN = Statement(
    Participant, sets=["shown_at", "last_seen_at"], where=["pk", "position"], where_null=["shown_at"]
)
_CLAIM = Statement(
    Participant,
    sets=["position", "shown_at", "last_seen_at"],
    literal_nulls=["served_at"],
    where=["pk", "position", "status"],
)
_VISIT = Statement(
    StepVisit,
    insert=[
        "participant",
        "position",
        "step_kind",
        "shown_at",
        "submitted_at",
        "server_ms",
        "client_active_ms",
        "client_hidden_ms",
        "client_blurs",
    ],
)
_RESPONSES = Statement(
    Response,
    insert=[
        *("participant", "position", "step_kind", "key", "value"),
        *("value_num", "is_check", "passed", "created_at"),
    ],
)


# --- Places: taking one, and the idle lease ----------------------------------------------


def _lease(participant: Participant) -> timedelta:
    """The lease of a participant resumed after a time-out: the short idle lease for one who
    took a place and never answered since, the time limit for everyone else."""
    if participant.place_idle:
        return timedelta(minutes=settings.PLACE_IDLE_MINUTES)
    return timedelta(minutes=lease_minutes(participant.study))


def place_pending(participant: Participant, kind: StepKind) -> bool:
    """Whether this request may give the participant their first place: a real participant
    who has none yet, at a page of a study design's kind (the flow engine's own kinds hand
    out none) that has not been served yet (a refresh takes nothing new)."""
    return (
        participant.placed_at is None
        and participant.served_at is None
        and not participant.is_preview
        and not participant.is_pilot
        and may_take_place(kind)
    )


def place_throttle(*, participant: Participant, client: str) -> None:
    """Count a place-taking from the client address `client`; past PLACE_RATE_LIMITS raise
    Throttled (the page is not served, so nothing is taken)."""
    wait = limits.rate_hit("place", client, settings.PLACE_RATE_LIMITS)
    if wait:
        flags.refusal_count(study_id=participant.study_id)
        raise Throttled(wait)


def place_taken(*, participant: Participant, now: datetime, answered: bool = False) -> None:
    """After a request that may have given the participant their first place (see
    `place_pending`): if it did, record when. A place taken by serving a page is held for
    PLACE_IDLE_MINUTES only, until the participant's next accepted answer (`step_submit`)
    extends it to the time limit; one taken by an answer is held at once."""
    if not place_held(participant):
        return
    changes: dict = {"placed_at": now}
    if not answered:
        idle_end = now + timedelta(minutes=settings.PLACE_IDLE_MINUTES)
        changes.update(place_idle=True, expires_at=min(participant.expires_at, idle_end))
    if Participant.objects.filter(pk=participant.pk, placed_at__isnull=True).update(**changes):
        for name, value in changes.items():
            setattr(participant, name, value)


def _place_worked(participant: Participant, now: datetime) -> None:
    """The first accepted answer after taking a place: held until the time limit's end (from
    the start, or from now for one resumed after their time limit)."""
    limit = timedelta(minutes=lease_minutes(participant.study))
    end = participant.started_at + limit
    expires = max(participant.expires_at, end if end > now else now + limit)
    Participant.objects.filter(pk=participant.pk).update(place_idle=False, expires_at=expires)
    participant.place_idle, participant.expires_at = False, expires


@dataclass(frozen=True)
class ClientTiming:
    active_ms: int | None = None
    hidden_ms: int | None = None
    blurs: int | None = None

    @classmethod
    def from_post(cls, data: dict) -> ClientTiming:
        def number(name: str) -> int | None:
            try:
                value = int(data.get(name, ""))
            except (TypeError, ValueError):
                return None
            return min(max(value, 0), 86_400_000)

        return cls(number("_active_ms"), number("_hidden_ms"), number("_blurs"))


def step_submit(
    *,
    participant: Participant,
    step: Step,
    kind: StepKind,
    form,
    timing: ClientTiming,
    evidence: flags.Evidence | None = None,
    now: datetime | None = None,
) -> Participant:
    """Store a valid submission of the current step and advance, all or nothing.

    For a one-page step the conditional UPDATE both claims the step (a second tab or a
    double click finds the position moved and gets StaleSubmission) and locks the
    participant row until commit. A multi-page step locks the row first and advances only
    when its kind says the step is finished. Each accepted page records its flags (`evidence`:
    the honeypot and the browser's typing counts; see participants/flags.py), never more.
    """
    now = now or timezone.now()
    current = None  # a multi-page step's row, by position: built only for one (issue #12)
    if kind.multi_page:
        current = Participant.objects.filter(pk=participant.pk, position=step.position, status=Status.ACTIVE)
    with transaction.atomic():
        if kind.multi_page:
            if not current.select_for_update().exists():
                raise StaleSubmission()
        elif not _CLAIM.update([step.position + 1, now, now], [participant.pk, step.position, Status.ACTIVE]):
            raise StaleSubmission()
        if participant.place_idle:
            _place_worked(participant, now)
        ctx = step_context(participant, step, now)
        ctx.timing = timing
        outcome = kind.submit(ctx, form)
        page = flags.Page(
            participant=participant,
            position=step.position,
            step_kind=step.kind,
            form=form,
            served_at=participant.served_at,
            started_at=participant.shown_at,
            now=now,
            answers=ctx.extra.get(RECORDED, []),
        )
        flags.flags_record(page=page, evidence=evidence or flags.Evidence())
        participant.served_at = None  # the next page is a new one: it must be served to be seen
        if ctx.stay and outcome is None:
            Participant.objects.filter(pk=participant.pk).update(last_seen_at=now, served_at=None)
            return participant
        if kind.multi_page:
            current.update(position=step.position + 1, shown_at=now, last_seen_at=now, served_at=None)
        _visit_record(participant, step, timing, now)
        participant.position, participant.shown_at = step.position + 1, now
        if outcome is not None:
            participant_finish(participant=participant, status=outcome.end_status, now=now, code=outcome.code)
        elif step.position >= len(ctx.steps):
            participant_finish(participant=participant, status=Status.COMPLETED, now=now)
    return participant


def step_unavailable(*, participant: Participant, error: StepUnavailable) -> None:
    """The current step cannot be served (e.g. every dialogue is full): end politely."""
    participant_finish(participant=participant, status=error.end_status, now=timezone.now())


def _visit_record(participant: Participant, step: Step, timing: ClientTiming, now: datetime) -> None:
    shown = participant.shown_at
    server_ms = int((now - shown).total_seconds() * 1000) if shown else None
    _VISIT.insert_rows(
        [
            (
                participant.pk,
                step.position,
                step.kind,
                shown,
                now,
                server_ms,
                timing.active_ms,
                timing.hidden_ms,
                timing.blurs,
            )
        ]
    )


def participant_finish(*, participant: Participant, status: str, now: datetime, code: str = "") -> None:
    """End the participant's study with a status (and, if a step says so, its own code)."""
    Participant.objects.filter(pk=participant.pk).update(status=status, finished_at=now, exit_code=code)
    participant.status, participant.finished_at, participant.exit_code = status, now, code


def participant_mark_returned(*, participant: Participant) -> None:
    """Prolific reported the submission RETURNED (or the experimenter did): free the place."""
    if participant.status in (Status.ACTIVE, Status.TIMED_OUT):
        participant_finish(participant=participant, status=Status.RETURNED, now=timezone.now())


def release_expired_leases(*, now: datetime | None = None) -> int:
    """Mark participants past their time limit as timed out; their places reopen.

    Not one whose short idle lease (a place taken by a page, not answered on since) ran out
    within the study's time limit: that place stops counting all the same (its lease is
    over: someone else may take it), but a participant still reading a long story was shown
    as timed out on the overview, in the exports and the API, from the fifth minute on the
    story page (the researcher walk). They stay active; their next request keeps the place
    if it is still free (`participant_resume`), and the time limit's end times them out."""
    now = now or timezone.now()
    expired = Participant.objects.filter(status=Status.ACTIVE, is_preview=False, expires_at__lte=now)
    reading = [
        p.pk
        for p in expired.filter(place_idle=True).select_related("study")
        if p.started_at + timedelta(minutes=lease_minutes(p.study)) > now
    ]
    return expired.exclude(pk__in=reading).update(status=Status.TIMED_OUT, finished_at=now)


# --- Answers and checks ------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    key: str
    value: str
    value_num: float | None = None
    is_check: bool = False
    passed: bool | None = None


RECORDED = "recorded_answers"  # ctx.extra: the (key, value) pairs stored by this submission


def responses_record(*, ctx: StepContext, answers: Iterable[Answer]) -> None:
    """Store the page's answers (one INSERT)."""
    answers = list(answers)
    position, kind, pk, now = ctx.step.position, ctx.step.kind, ctx.participant.pk, ctx.now
    _RESPONSES.insert_rows(
        [(pk, position, kind, a.key, a.value, a.value_num, a.is_check, a.passed, now) for a in answers]
    )
    # What this submission stored, for its flags (`flags_record` matches free text to keys).
    ctx.extra.setdefault(RECORDED, []).extend((a.key, a.value) for a in answers)


def attention_failures_add(*, ctx: StepContext, failures: int, detail: str) -> StepOutcome | None:
    """Count failed attention checks; exclude from analysis; end the study at the threshold."""
    if failures <= 0:
        return None
    participant = ctx.participant
    Participant.objects.filter(pk=participant.pk).update(
        attention_failures=F("attention_failures") + failures
    )
    participant.attention_failures += failures
    exclusion_add(participant=participant, reason=Exclusion.Reason.ATTENTION, detail=detail)
    if participant.attention_failures >= max(ctx.study.attention_failures_to_end, 1):
        return StepOutcome(end_status=Status.FAILED_CHECK, detail=detail)
    return None


# --- Exclusions --------------------------------------------------------------------------


def exclusion_add(*, participant: Participant, reason: str, detail: str = "", by=None) -> Exclusion:
    """Exclude a participant from analysis (idempotent per reason while active)."""
    with transaction.atomic():
        current = Exclusion.objects.filter(
            participant=participant, reason=reason, revoked_at__isnull=True
        ).first()
        if current is not None:
            return current
        exclusion = Exclusion.objects.create(
            participant=participant,
            reason=reason,
            detail=detail[:300],
            created_at=timezone.now(),
            created_by=by,
        )
        Participant.objects.filter(pk=participant.pk).update(excluded=True)
        participant.excluded = True
    return exclusion


def exclusion_revoke(*, exclusion: Exclusion, by=None, note: str = "") -> None:
    """Undo an exclusion; the participant counts again once no active exclusion is left."""
    with transaction.atomic():
        if exclusion.revoked_at is None:
            Exclusion.objects.filter(pk=exclusion.pk).update(
                revoked_at=timezone.now(), revoked_by=by, revoke_note=note[:300]
            )
        active = Exclusion.objects.filter(
            participant_id=exclusion.participant_id, revoked_at__isnull=True
        ).exists()
        Participant.objects.filter(pk=exclusion.participant_id).update(excluded=active)


# --- Exit --------------------------------------------------------------------------------


def exit_code(participant: Participant) -> str:
    if participant.exit_code:
        return participant.exit_code
    study = participant.study
    return {
        Status.COMPLETED: study.completion_code,
        Status.FAILED_CHECK: study.failed_check_code,
        Status.NO_CONSENT: study.no_consent_code,
        Status.SCREENED_OUT: study.screened_out_code,
    }.get(participant.status, "")


def exit_url(participant: Participant) -> str:
    code = exit_code(participant)
    return f"{settings.PROLIFIC_COMPLETE_URL}{code}" if code else ""


def kind_for(step: Step) -> StepKind:
    return registry.get(step.kind)
