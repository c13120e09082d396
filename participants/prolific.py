"""The one adapter to Prolific's researcher API (v1), and the services that run a study through it.

The adapter (`Client`): JSON over HTTPS with `Authorization: Token …`, the token from the secret
setting PROLIFIC_API_TOKEN (never stored, never logged, never sent on a redirect: redirects are
not followed). Every failure is a `ProlificError`: `retryable` says whether trying again can
help, `maybe_done` whether the call may have taken effect on Prolific's side all the same (the
request went out and no answer said it was refused: a timeout, a dropped connection, a 5xx).
Calls are retried here with backoff that honours `Retry-After` (429), except that a call that is
not idempotent (paying a bonus) is retried only when it surely did nothing.

The services (`prolific_*`, `submission_seen`, `place_free`, `webhook_*`, keyword-only): create a
draft study on Prolific from a Rostrum study (its link with the three placeholders, its codes
with their actions, places, times, reward), publish, pause, resume, stop; sync submissions,
where RETURNED, TIMED-OUT and REJECTED free the participant's place through the flow engine's
own services; the same from a signed webhook. Review and bonuses: `participants.prolific_review`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import logging
import random
import re
import secrets
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urljoin, urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from participants import services
from participants.models import Exclusion, Participant, ProlificStudy, ProlificSubmission, Recruitment
from studies.models import Step, Study, prolific_max_minutes

log = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}
MAX_BACKOFF_S = 20.0
BACKOFF_S = 1.0
MAX_PAGES = 1000
SubmissionStatus = ProlificSubmission.Status
Status = Participant.Status
# Submissions that no longer count toward Prolific's places: their Rostrum place is freed too.
FREEING = {SubmissionStatus.RETURNED, SubmissionStatus.TIMED_OUT, SubmissionStatus.REJECTED}
SUBMITTED = {SubmissionStatus.AWAITING_REVIEW, SubmissionStatus.APPROVED, SubmissionStatus.PARTIALLY_APPROVED}
PLACEHOLDERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
DEVICES = ("desktop", "tablet", "mobile")
CREATE_CLAIM_SECONDS = 120  # an unfinished draft creation younger than this may still be running
WEBHOOK_TOLERANCE_S = 300  # a webhook's timestamp may be this far from our clock (replays refused)


# --- The adapter ---------------------------------------------------------------------------


class ProlificError(Exception):
    """A call to Prolific failed. `kind` names why; `retryable` says whether retrying can help;
    `maybe_done` whether the call may have taken effect anyway; `detail` holds a validation
    error's problems by field."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        maybe_done: bool = False,
        detail: object = None,
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.maybe_done = maybe_done
        self.detail = detail
        self.waits: list[float] = []  # seconds waited before each retry


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: following it would send the token wherever it points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirects)


class Client:
    """Prolific's API with the token of the settings (or the one given, for tests of errors)."""

    def __init__(self, *, token: str | None = None, base_url: str | None = None) -> None:
        self._token = settings.PROLIFIC_API_TOKEN if token is None else token
        self.base_url = (base_url or settings.PROLIFIC_API_URL).rstrip("/")
        self.timeout = settings.PROLIFIC_TIMEOUT_S
        self.tries = settings.PROLIFIC_MAX_RETRIES + 1
        self.waits: list[float] = []  # the last call's waits before retries
        if not self._token:
            raise ProlificError(
                "not_configured", "PROLIFIC_API_TOKEN is not set (see the README)", retryable=False
            )

    def __repr__(self) -> str:
        return f"<prolific.Client {self.base_url}>"  # never the token

    # Studies
    def study_create(self, payload: dict) -> dict:
        """Not idempotent (a second draft): an unknown outcome is found again by internal name."""
        return self.call("POST", "/studies/", payload, idempotent=False)

    def studies(self) -> list[dict]:
        return self.pages("/studies/")

    def study(self, study_id: str) -> dict:
        return self.call("GET", f"/studies/{_id(study_id)}/")

    def study_transition(self, study_id: str, action: str) -> dict:
        return self.call("POST", f"/studies/{_id(study_id)}/transition/", {"action": action})

    # Submissions
    def submissions(self, study_id: str) -> list[dict]:
        return self.pages(f"/studies/{_id(study_id)}/submissions/")

    def submission(self, submission_id: str) -> dict:
        return self.call("GET", f"/submissions/{_id(submission_id)}/")

    def submission_transition(self, submission_id: str, action: str, **fields: str) -> dict:
        body = {"action": action, **fields}
        return self.call("POST", f"/submissions/{_id(submission_id)}/transition/", body)

    def bulk_approve(self, study_id: str, submission_ids: list[str]) -> dict:
        body = {"study_id": study_id, "submission_ids": submission_ids}
        return self.call("POST", "/submissions/bulk-approve/", body)

    # Bonuses: setting one up pays nothing; paying is NOT idempotent (each call pays again).
    def bonus_setup(self, study_id: str, rows: list[tuple[str, int]]) -> dict:
        csv = "\n".join(f"{who},{cents // 100}.{cents % 100:02d}" for who, cents in rows)
        return self.call("POST", "/submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv})

    def bonus_pay(self, bulk_id: str) -> dict:
        return self.call("POST", f"/bulk-bonus-payments/{_id(bulk_id)}/pay/", idempotent=False)

    # Participant groups (a screening study's groups, to publish a main study to)
    def participant_groups(self) -> list[dict]:
        return self.pages(f"/participant-groups/{_scope_query()}")

    def participant_group_create(self, name: str, participant_ids: list[str]) -> dict:
        """Not idempotent (a second group of the same name): an unknown outcome is found by name."""
        body = {"name": name, "participant_ids": participant_ids, **_scope()}
        return self.call("POST", "/participant-groups/", body, idempotent=False)

    def participant_group_add(self, group_id: str, participant_ids: list[str]) -> dict:
        """Idempotent: a participant already in the group is ignored."""
        body = {"participant_ids": participant_ids}
        return self.call("POST", f"/participant-groups/{_id(group_id)}/participants/", body)

    def participant_group_remove(self, group_id: str, participant_ids: list[str]) -> dict:
        """Idempotent: a participant not in the group is ignored (DELETE with a body, as Prolific's
        "Remove participants from a participant group")."""
        body = {"participant_ids": participant_ids}
        return self.call("DELETE", f"/participant-groups/{_id(group_id)}/participants/", body)

    def participant_group_members(self, group_id: str) -> list[dict]:
        return self.pages(f"/participant-groups/{_id(group_id)}/participants/")

    # Plumbing
    def pages(self, path: str) -> list[dict]:
        """Every result of a paged list, following `_links.next.href` on Prolific's own host only."""
        rows: list[dict] = []
        url: str | None = self.base_url + path
        for _ in range(MAX_PAGES):
            data = self.call("GET", url)
            rows += data.get("results") or []
            url = _next_page(data, url)
            if url is None:
                return rows
            if urlsplit(url)[:2] != urlsplit(self.base_url)[:2]:
                raise ProlificError("malformed", "a next page on another host", retryable=False)
        raise ProlificError("malformed", f"more than {MAX_PAGES} pages", retryable=False)

    def call(self, method: str, path: str, body: dict | None = None, *, idempotent: bool = True) -> dict:
        """One call, retried with backoff while retrying can help and cannot do a thing twice."""
        url = path if path.startswith("http") else self.base_url + path
        self.waits = []
        for number in range(1, self.tries + 1):
            try:
                return self._once(method, url, body)
            except ProlificError as error:
                error.waits = list(self.waits)
                repeatable = idempotent or not error.maybe_done
                if not error.retryable or not repeatable or number == self.tries:
                    raise
                self.waits.append(backoff(number, error.retry_after))
                log.info(
                    "Prolific %s %s: %s; retrying in %.1fs", method, _path(url), error.kind, self.waits[-1]
                )
                time.sleep(self.waits[-1])
        raise AssertionError("unreachable")

    def _once(self, method: str, url: str, body: dict | None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Token {self._token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
        try:
            with _opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise _status_error(error.code, error.headers.get("Retry-After"), error.read()) from None
        except urllib.error.URLError as error:
            raise _transport_error(error.reason) from None
        except (TimeoutError, ConnectionError, http.client.HTTPException, OSError) as error:
            raise _transport_error(error) from None
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise ProlificError(
                "malformed", "the answer is not JSON", retryable=True, maybe_done=True
            ) from None


def backoff(number: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(max(retry_after, 0.0), MAX_BACKOFF_S)
    return min(BACKOFF_S * 2 ** (number - 1) * (0.5 + random.random()), MAX_BACKOFF_S)


def _id(value: str) -> str:
    """Ids go into paths: Prolific's are letters and digits, nothing else."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", value or ""):
        raise ProlificError("invalid", "not a Prolific id", retryable=False)
    return value


def _scope() -> dict:
    """The workspace a participant group belongs to (PROLIFIC_WORKSPACE_ID, when set)."""
    workspace = settings.PROLIFIC_WORKSPACE_ID
    return {"workspace_id": workspace} if workspace else {}


def _scope_query() -> str:
    workspace = _scope().get("workspace_id")
    return f"?workspace_id={_id(workspace)}" if workspace else ""


def _path(url: str) -> str:
    return urlsplit(url).path


def _next_page(data: dict, url: str) -> str | None:
    links = data.get("_links") or {}
    nxt = (links.get("next") or {}).get("href") if isinstance(links, dict) else None
    nxt = nxt or (data.get("next") if isinstance(data.get("next"), str) else None)
    return urljoin(url, nxt) if nxt else None


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        return max((parsedate_to_datetime(value) - timezone.now()).total_seconds(), 0.0)
    except (TypeError, ValueError):
        return None


def _status_error(status: int, retry_after: str | None, raw: bytes) -> ProlificError:
    try:
        payload = json.loads(raw or b"{}")
    except ValueError:
        payload = {}
    body = payload.get("error", payload) if isinstance(payload, dict) else {}
    detail = body.get("detail") if isinstance(body, dict) else None
    title = (body.get("title") if isinstance(body, dict) else None) or f"HTTP {status}"
    message = short(f"{title}: {_detail_text(detail)}" if detail else str(title))
    kind = {400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found", 429: "rate_limited"}.get(
        status, f"http_{status}"
    )
    return ProlificError(
        kind,
        message,
        retryable=status in RETRYABLE_STATUS,
        status=status,
        retry_after=_retry_after(retry_after),
        maybe_done=status >= 500,  # a 4xx was refused; a 5xx may have done part of the work
        detail=detail,
    )


def _transport_error(reason: object) -> ProlificError:
    if isinstance(reason, ConnectionRefusedError | socket.gaierror):  # nothing was sent
        return ProlificError("connection", f"cannot reach Prolific: {short(str(reason))}", retryable=True)
    if isinstance(reason, TimeoutError):
        return ProlificError("timeout", "Prolific did not answer in time", retryable=True, maybe_done=True)
    message = f"the connection to Prolific broke: {short(str(reason) or type(reason).__name__)}"
    return ProlificError("connection", message, retryable=True, maybe_done=True)


def _detail_text(detail: object) -> str:
    if isinstance(detail, dict):
        return "; ".join(
            f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in detail.items()
        )
    if isinstance(detail, list):
        return " ".join(map(str, detail))
    return str(detail)


def short(text: str, limit: int = 280) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def client() -> Client:
    return Client()


# --- Statuses and what disagrees ------------------------------------------------------------


def status_key(raw: str | None) -> str:
    """Prolific's status in one spelling ('AWAITING REVIEW', 'AWAITING_REVIEW' → AWAITING_REVIEW;
    'TIMED-OUT' → TIMED_OUT); an unknown one is UNKNOWN."""
    key = re.sub(r"[\s_-]+", "_", (raw or "").strip().upper())
    return key if key in SubmissionStatus.values else SubmissionStatus.UNKNOWN


def disagreement(participant: Participant | None, submission: ProlificSubmission | None) -> str:
    """Where Rostrum and Prolific disagree about one person, in a sentence ('' when they agree)."""
    if submission is None:
        return "No submission on Prolific with this id." if participant is not None else ""
    prolific = submission.status
    if participant is None:
        if prolific in SUBMITTED:
            return "Submitted on Prolific but never reached Rostrum: no data here."
        return ""
    ours = participant.status
    if prolific in FREEING and ours == Status.ACTIVE:
        return f"{submission.get_status_display()} on Prolific, still active here."
    if prolific in SUBMITTED and ours in (Status.ACTIVE, Status.TIMED_OUT, Status.RETURNED):
        return f"Submitted on Prolific, but {participant.get_status_display().lower()} here."
    if prolific == SubmissionStatus.ACTIVE and ours not in (Status.ACTIVE, Status.TIMED_OUT):
        return "Finished here, not (yet) submitted on Prolific."
    if prolific == SubmissionStatus.RETURNED and ours == Status.COMPLETED:
        return "Returned on Prolific after completing here (not paid; excluded, revocable)."
    if prolific == SubmissionStatus.TIMED_OUT and ours == Status.COMPLETED:
        return "Timed out on Prolific after completing here (the code missed?): pay or exclude by hand."
    expected = services.exit_code(participant)
    if prolific in SUBMITTED and submission.entered_code and expected and submission.entered_code != expected:
        return f"Entered the code {submission.entered_code} on Prolific; Rostrum gave {expected}."
    return ""


# --- Studies ------------------------------------------------------------------------------


def study_url(study: Study) -> str:
    """The study URL to give Prolific, with its three placeholders."""
    return f"{settings.SITE_URL}{reverse('enter', args=[study.slug])}?{PLACEHOLDERS}"


def step_codes(study: Study) -> list[str]:
    """Codes a step can end a participant with (a step config's `…_code` values, e.g. a persuasion
    dialogue's partner-left code), besides the study's own."""
    own = {study.completion_code, study.failed_check_code, study.no_consent_code, study.screened_out_code}
    found = set()
    for config in Step.objects.filter(study=study).values_list("config", flat=True):
        for key, value in (config or {}).items():
            if key.endswith("_code") and isinstance(value, str) and value.strip():
                found.add(value.strip())
    return sorted(found - own)


def screens_out(study: Study) -> bool:
    """Whether participants can leave with the screened-out code (a screening step, and the code)."""
    return bool(study.screened_out_code) and Step.objects.filter(study=study, kind="screening").exists()


def completion_codes(
    study: Study, *, screen_out_reward_cents: int | None = None, screen_out_slots: int | None = None
) -> list[dict]:
    """The study's codes with Prolific's types and what Prolific does on each: completions and
    failed checks wait for review here; declining consent asks the participant to return; a
    screen-out is paid the fixed screen-out reward; a step's own codes wait for review."""
    review = [{"action": "MANUALLY_REVIEW"}]
    codes = [
        {"code": study.completion_code, "code_type": "COMPLETED", "actions": review},
        {"code": study.failed_check_code, "code_type": "FAILED_ATTENTION_CHECK", "actions": review},
        {
            "code": study.no_consent_code,
            "code_type": "NO_CONSENT",
            "actions": [{"action": "REQUEST_RETURN", "return_reason": "You did not consent to take part."}],
        },
    ]
    if screens_out(study):
        action = {"action": "FIXED_SCREEN_OUT_PAYMENT", "fixed_screen_out_reward": screen_out_reward_cents}
        if screen_out_slots:
            action["slots"] = screen_out_slots
        actions = [action] if screen_out_reward_cents else review
        codes.append({"code": study.screened_out_code, "code_type": "FIXED_SCREENOUT", "actions": actions})
    codes += [{"code": code, "code_type": "OTHER", "actions": review} for code in step_codes(study)]
    return codes


@dataclass
class Draft:
    """What a draft study on Prolific is made with, beside the Rostrum study's own settings."""

    places: int
    reward_cents: int
    description: str
    devices: tuple[str, ...] = DEVICES
    screen_out_reward_cents: int | None = None
    screen_out_slots: int | None = None

    def problems(self, study: Study) -> list[str]:
        problems = []
        if self.places < 1:
            problems.append("Give at least one place.")
        if self.reward_cents < 1:
            problems.append("Give a reward (in cents) of at least 1.")
        if not self.description.strip():
            problems.append("Give a description: Prolific shows it to participants.")
        if not set(self.devices) <= set(DEVICES) or not self.devices:
            problems.append(f"Devices are some of {', '.join(DEVICES)}.")
        if screens_out(study) and not self.screen_out_reward_cents:
            problems.append(
                "The study screens participants out: give the fixed screen-out reward (in cents), as "
                "Prolific requires for in-study screening."
            )
        return problems


def study_payload(study: Study, draft: Draft, internal_name: str) -> dict:
    estimate = study.estimated_minutes
    return {
        "name": study.title,
        "internal_name": internal_name,
        "description": draft.description,
        "external_study_url": study_url(study),
        "prolific_id_option": "url_parameters",
        "completion_codes": completion_codes(
            study,
            screen_out_reward_cents=draft.screen_out_reward_cents,
            screen_out_slots=draft.screen_out_slots,
        ),
        "total_available_places": draft.places,
        "estimated_completion_time": estimate,
        "maximum_allowed_time": max(study.effective_time_limit_minutes, prolific_max_minutes(estimate)),
        "reward": draft.reward_cents,
        "device_compatibility": list(draft.devices),
        "is_custom_screening": screens_out(study),
        **study_filters(study),
    }


def study_filters(study: Study) -> dict:
    """Who may take part, as Prolific's filters: only the chosen participant group of a screening
    study (`participant_group_allowlist`), and nobody who took part in a sister study
    (`previous_studies_blocklist`, Prolific's "exclude participants from other studies"; its
    counterpart `previous_studies_allowlist` would let only them in). Both take ids as strings in
    `selected_values` (docs/decisions.md, "Prolific API": the names and where they were checked)."""
    recruitment = Recruitment.objects.filter(study=study).select_related("group").first()
    if recruitment is None:
        return {}
    filters = []
    if recruitment.group and recruitment.group.prolific_group_id:
        filters.append(
            {
                "filter_id": "participant_group_allowlist",
                "selected_values": [recruitment.group.prolific_group_id],
            }
        )
    sisters = sorted(
        recruitment.sisters.exclude(prolific_study_id="").values_list("prolific_study_id", flat=True)
    )
    if sisters:
        filters.append({"filter_id": "previous_studies_blocklist", "selected_values": sisters})
    return {"filters": filters} if filters else {}


def prolific_study_create(*, study: Study, draft: Draft, api: Client | None = None) -> ProlificStudy:
    """Create the study on Prolific as a draft and keep its id as the study's STUDY_ID.

    The row is claimed first (one per study), so a double click creates one draft; a creation cut
    short before the id was saved is found again on Prolific by its internal name."""
    problems = draft.problems(study)
    if study.prolific_study_id:
        problems.append(f"The study is already linked to Prolific study {study.prolific_study_id}.")
    if study.locked_at is not None:
        problems.append("The study is frozen (live, or entered): duplicate it as a new draft to run it anew.")
    if problems:
        raise ValidationError(problems)
    api = api or client()
    row, resumed = _draft_claim(study, draft)
    payload = study_payload(study, draft, row.internal_name)
    try:
        found = _draft_on_prolific(api, row.internal_name) if resumed else None
        created = found or api.study_create(payload)
    except ProlificError as error:
        if not error.maybe_done:  # surely not created: the next click starts afresh
            ProlificStudy.objects.filter(pk=row.pk, status="").delete()
        raise
    return _draft_keep(study, row, created, payload)


def _draft_claim(study: Study, draft: Draft) -> tuple[ProlificStudy, bool]:
    """The study's row, claimed for this creation; True when it takes over an unfinished one."""
    now = timezone.now()
    try:
        with transaction.atomic():
            return ProlificStudy.objects.create(
                study=study,
                internal_name=f"rostrum {study.slug} {secrets.token_hex(4)}",
                places=draft.places,
                reward_cents=draft.reward_cents,
                created_at=now,
            ), False
    except IntegrityError:
        pass
    row = ProlificStudy.objects.get(study=study)
    if row.status:
        raise ValidationError("The study already has a draft on Prolific.")
    recent = row.created_at > now - timedelta(seconds=CREATE_CLAIM_SECONDS)
    taken = ProlificStudy.objects.filter(pk=row.pk, status="", created_at=row.created_at).update(
        created_at=now
    )
    if recent or not taken:  # the other attempt may still be running
        raise ValidationError("The draft is being created (a second click?): wait a minute, then reload.")
    return row, True


def _draft_on_prolific(api: Client, internal_name: str) -> dict | None:
    """The draft an unfinished attempt may have made, found by its internal name."""
    return next((s for s in api.studies() if s.get("internal_name") == internal_name), None)


def _draft_keep(study: Study, row: ProlificStudy, created: dict, payload: dict) -> ProlificStudy:
    """Save the new draft's id as the study's STUDY_ID (unless the study froze meanwhile)."""
    prolific_id = str(created.get("id") or "")
    with transaction.atomic():
        linked = Study.objects.filter(pk=study.pk, locked_at__isnull=True, prolific_study_id="").update(
            prolific_study_id=prolific_id
        )
        ProlificStudy.objects.filter(pk=row.pk).update(
            status=created.get("status") or "UNPUBLISHED",
            places=payload["total_available_places"],
            reward_cents=payload["reward"],
            maximum_minutes=payload["maximum_allowed_time"],
        )
    if not linked:
        raise ValidationError(
            f"Prolific made draft {prolific_id}, but the study changed meanwhile: link it by hand."
        )
    study.prolific_study_id = prolific_id
    row.refresh_from_db()
    return row


def prolific_study_link(*, study: Study) -> ProlificStudy:
    """The study's Prolific row, made for a study whose STUDY_ID was set by hand."""
    if not study.prolific_study_id:
        raise ValidationError("The study has no Prolific STUDY_ID: create a draft on Prolific first.")
    row, _ = ProlificStudy.objects.get_or_create(
        study=study,
        defaults={"internal_name": f"rostrum {study.slug} linked {study.pk}", "created_at": timezone.now()},
    )
    return row


STUDY_ACTIONS = {
    "PUBLISH": "published",
    "PAUSE": "paused",
    "START": "resumed",
    "STOP": "stopped",
}


def prolific_study_transition(*, study: Study, action: str, api: Client | None = None) -> ProlificStudy:
    """Publish, pause, resume (START) or stop the study on Prolific. Publishing or resuming
    brings participants: the study must be live here first."""
    if action not in STUDY_ACTIONS:
        raise ValidationError(f"Not an action on a Prolific study: {action}.")
    if action in ("PUBLISH", "START") and study.status != Study.Status.LIVE:
        raise ValidationError(
            "Set the study live here first: Prolific would send participants to a closed door."
        )
    row = prolific_study_link(study=study)
    answer = (api or client()).study_transition(study.prolific_study_id, action)
    ProlificStudy.objects.filter(pk=row.pk).update(status=answer.get("status") or row.status)
    row.refresh_from_db()
    return row


# --- Submissions: sync, webhooks, freeing places --------------------------------------------


@dataclass
class SyncReport:
    seen: int = 0
    freed: int = 0
    disagreements: int = 0


def prolific_sync(*, study: Study, api: Client | None = None) -> SyncReport:
    """Read every submission of the study on Prolific; free the places of those RETURNED,
    TIMED-OUT or REJECTED since the last look."""
    row = prolific_study_link(study=study)
    api = api or client()
    report = SyncReport()
    try:
        remote = api.study(study.prolific_study_id)
        submissions = api.submissions(study.prolific_study_id)
    except ProlificError as error:
        ProlificStudy.objects.filter(pk=row.pk).update(sync_error=short(str(error), 300))
        raise
    for data in submissions:
        submission, freed = submission_seen(study=study, data=data)
        report.seen += 1
        report.freed += freed
        report.disagreements += bool(disagreement(submission.participant, submission))
    ProlificStudy.objects.filter(pk=row.pk).update(
        status=remote.get("status") or row.status, synced_at=timezone.now(), sync_error=""
    )
    return report


def prolific_sync_running(*, api: Client | None = None) -> int:
    """Periodic (Celery beat): sync every study that may have submissions moving on Prolific: live
    or paused here (and not a pilot) with a STUDY_ID, or published there. Without a token, nothing."""
    if not settings.PROLIFIC_API_TOKEN:
        return 0
    api = api or client()
    published = ProlificStudy.objects.exclude(status__in=["", "UNPUBLISHED", "COMPLETED"]).values("study_id")
    running = Q(status__in=[Study.Status.LIVE, Study.Status.PAUSED], pilot=False) | Q(pk__in=published)
    freed = 0
    for study in Study.objects.exclude(prolific_study_id="").filter(running).order_by("pk"):
        try:
            freed += prolific_sync(study=study, api=api).freed
        except ProlificError as error:
            log.warning("Prolific sync of %s failed: %s", study.slug, error)
    return freed


def submission_seen(*, study: Study, data: dict, category: str = "") -> tuple[ProlificSubmission, bool]:
    """Save what Prolific says of one submission; when its status has just become RETURNED,
    TIMED-OUT or REJECTED, free the participant's place. Returns (row, whether a place was freed)."""
    now = timezone.now()
    status = status_key(data.get("status"))
    pid = str(data.get("participant_id") or data.get("participant") or "")[:64]
    submission_id = str(data["id"])[:64]
    with transaction.atomic():
        row = ProlificSubmission.objects.select_for_update().filter(submission_id=submission_id).first()
        previous = row.status if row else ""
        pid = pid or (row.prolific_pid if row else "")
        participant = (
            Participant.objects.filter(
                study=study, prolific_pid=pid, is_preview=False, is_pilot=False
            ).first()
            if pid
            else None
        )
        fields = {
            "study": study,
            "prolific_pid": pid,
            "participant": participant,
            "status": status,
            "seen_at": now,
        }
        code = data.get("entered_code") or data.get("study_code")
        if code is not None:
            fields["entered_code"] = str(code)[:64]
        for name in ("started_at", "completed_at"):
            if data.get(name):
                fields[name] = parse_datetime(str(data[name]))
        row, _ = ProlificSubmission.objects.update_or_create(submission_id=submission_id, defaults=fields)
        freed = status != previous and status in FREEING and participant is not None
        if freed:
            freed = place_free(
                participant=participant, status=status, category=category or row.rejection_category
            )
    return row, freed


def place_free(*, participant: Participant, status: str, category: str = "") -> bool:
    """Free the place of a participant whose submission Prolific no longer counts, through the
    flow engine's services: RETURNED as the admin's "returned" action does (after completing: by
    an exclusion, as they are not paid and may have withdrawn); TIMED-OUT as the lease sweep does
    (they may still finish if not replaced, as on Prolific); REJECTED by an exclusion (which frees
    a completed participant's place where exclusions free places), ending them too if still in
    progress. A completed participant timed out on Prolific is only flagged (`disagreement`): their
    data is whole, and paying them is the experimenter's call. Returns whether anything changed."""
    before = (participant.status, participant.excluded)
    now = timezone.now()
    if status == SubmissionStatus.RETURNED and participant.status == Status.COMPLETED:
        detail = "Returned on Prolific after completing (not paid; may have withdrawn)"
        services.exclusion_add(participant=participant, reason=Exclusion.Reason.MANUAL, detail=detail)
    elif status == SubmissionStatus.RETURNED:
        services.participant_mark_returned(participant=participant)
    elif status == SubmissionStatus.TIMED_OUT and participant.status == Status.ACTIVE:
        services.participant_finish(participant=participant, status=Status.TIMED_OUT, now=now)
    elif status == SubmissionStatus.REJECTED and participant.status in (
        Status.ACTIVE,
        Status.TIMED_OUT,
        Status.COMPLETED,
    ):
        detail = f"Rejected on Prolific ({category})" if category else "Rejected on Prolific"
        services.exclusion_add(participant=participant, reason=Exclusion.Reason.MANUAL, detail=detail)
        if participant.status == Status.ACTIVE:
            services.participant_finish(participant=participant, status=Status.TIMED_OUT, now=now)
    return (participant.status, participant.excluded) != before


def webhook_verified(
    *, body: bytes, timestamp: str, signature: str, secret: str, now: float | None = None
) -> bool:
    """Prolific's webhook signature (docs.prolific.com, "Verifying"): X-Prolific-Request-Signature
    is base64(HMAC-SHA256(secret, timestamp + body)), X-Prolific-Request-Timestamp the UNIX time it
    was sent. Prolific's example signs the body as Python's json.dumps writes it, so that form is
    accepted beside the raw bytes. A timestamp more than WEBHOOK_TOLERANCE_S away is refused
    (a replayed request)."""
    if not (secret and timestamp and signature):
        return False
    try:
        sent = float(timestamp)
    except ValueError:
        return False
    if abs((now if now is not None else time.time()) - sent) > WEBHOOK_TOLERANCE_S:
        return False
    bodies = [body]
    try:
        bodies.append(json.dumps(json.loads(body)).encode())
    except ValueError:
        pass
    for signed in bodies:
        digest = hmac.new(secret.encode(), timestamp.encode() + signed, hashlib.sha256).digest()
        if hmac.compare_digest(base64.b64encode(digest), signature.strip().encode()):
            return True
    return False


def webhook_sign(*, body: bytes, secret: str, timestamp: str) -> str:
    """The signature Prolific sends with `body` (for tests and for checking a set-up)."""
    return base64.b64encode(
        hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    ).decode()


def webhook_event(*, event: dict, api: Client | None = None) -> bool:
    """A submission's status changed on Prolific (a verified webhook): apply it at once, as the
    sync would. The event names the submission (`resource_id`) and, usually, its status, study and
    participant; what it leaves out is read from the API. Returns whether the submission is ours."""
    submission_id = str(event.get("resource_id") or event.get("submission_id") or "")[:64]
    if not submission_id:
        return False
    known = ProlificSubmission.objects.select_related("study").filter(submission_id=submission_id).first()
    status = event.get("status")
    pid = event.get("participant_id") or (known.prolific_pid if known else None)
    study = known.study if known else _study_of(str(event.get("study_id") or ""))
    if not (status and pid and study):
        remote = (api or client()).submission(submission_id)
        status = status or remote.get("status")
        pid = pid or remote.get("participant_id") or remote.get("participant")
        study = study or _study_of(str(remote.get("study_id") or remote.get("study") or ""))
    if study is None:
        return False
    submission_seen(study=study, data={"id": submission_id, "status": status, "participant_id": pid})
    return True


def _study_of(prolific_id: str) -> Study | None:
    if not prolific_id:
        return None
    row = ProlificStudy.objects.select_related("study").filter(study__prolific_study_id=prolific_id).first()
    return row.study if row else Study.objects.filter(prolific_study_id=prolific_id).first()
