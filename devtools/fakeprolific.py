"""A fake of Prolific's researcher API (v1), for tests and demos: the endpoints Rostrum's adapter
(`participants/prolific.py`) uses, their statuses, their rules and their error shapes.

A plain ASGI application (no framework) served by uvicorn in a thread (``run_in_thread``) or from
the command line (``python -m devtools.fakeprolific --port 8998 --token T``). Its base URL for
``PROLIFIC_API_URL`` is ``server.api_url`` (``http://127.0.0.1:PORT/api/v1``).

Routes (all under ``/api/v1``, all needing ``Authorization: Token <token>``, else a 401):

- ``POST /studies/`` creates a draft (status ``UNPUBLISHED``), checking what Prolific checks: a
  name and a description, a study URL carrying the three placeholders ``{{%PROLIFIC_PID%}}``,
  ``{{%STUDY_ID%}}`` and ``{{%SESSION_ID%}}``, completion codes with known types and actions,
  places, an estimated time, a maximum time of at least 2 + X + 2·√X minutes, a reward in cents;
  ``GET /studies/`` and ``GET /studies/{id}/``;
- ``POST /studies/{id}/transition/`` with ``PUBLISH`` (draft → ``ACTIVE``), ``PAUSE``, ``START``
  (paused → active) and ``STOP`` (→ ``AWAITING REVIEW``);
- ``GET /studies/{id}/submissions/`` (paged: ``_links.next.href``, ``page_size`` per page);
  ``GET /submissions/{id}/`` (with ``bonus_payments``, the amounts paid, in cents);
- ``POST /submissions/{id}/transition/``: ``APPROVE`` and ``REJECT`` from ``AWAITING_REVIEW`` only; a
  rejection needs a ``message`` of at least 100 characters and a known ``rejection_category``;
- ``POST /submissions/bulk-approve/`` (``study_id``, ``submission_ids``);
- ``POST /submissions/bonus-payments/`` (``study_id``, ``csv_bonuses``: ``participant id,amount`` lines)
  sets up a bulk bonus payment without paying it; ``POST /bulk-bonus-payments/{id}/pay/`` pays it,
  and, like Prolific's, is NOT idempotent: every call pays again. ``pay_calls`` counts the calls,
  so a test can assert that a bonus went out exactly once;
- ``POST /participant-groups/`` (``name``, ``participant_ids``, optional ``workspace_id``) creates a
  participant group, ``GET /participant-groups/`` lists them; ``POST /participant-groups/{id}/participants/``
  (``participant_ids``) adds members (one already in is ignored), ``DELETE`` the same path with
  ``participant_ids`` removes members (one not in is ignored), ``GET`` the same path lists them.
  A new study's ``filters`` are checked (a list of ``filter_id`` and ``selected_values``; the
  filter ids must be ones Prolific knows, ``FILTER_IDS``: a name Prolific does not know, such as
  a bare ``previous_studies``, is refused; ``participant_group_allowlist`` / ``_blocklist`` must name
  known groups, ``previous_studies_allowlist`` / ``_blocklist`` known studies) and kept with the
  study.

Errors have Prolific's shape: ``{"error": {"status", "error_code", "title", "detail"}}``, where
``detail`` maps a field to its problems for a 400 validation error.

Statuses are spelt as ``../shared/prolific.md`` spells them (``AWAITING_REVIEW``, ``TIMED-OUT``, …);
Prolific's own responses have used other spellings (``AWAITING REVIEW``), which the adapter reads
too. Tests drive Prolific's side with ``study_add``, ``submission_add`` and ``submission_set`` (a participant
taking part, returning, timing out) and script failures with ``script``: a status (e.g. 429 with
``Retry-After``) for the next ``times`` matching requests, or ``drop=True``: the request is carried
out, then the connection closes without an answer (a crash of the network between "sent" and
"answered").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import secrets
import threading
from collections import Counter
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import parse_qs

import uvicorn

from devtools.fakellm import ThreadedServer, lifespan, read_body, uvicorn_config

PLACEHOLDERS = ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}")
CODE_TYPES = {
    "COMPLETED",
    "FAILED_ATTENTION_CHECK",
    "NO_CONSENT",
    "FIXED_SCREENOUT",
    "INCOMPATIBLE_DEVICE",
    "GIVE_BONUS",
    "FOLLOW_UP_STUDY",
    "OTHER",
}
CODE_ACTIONS = {
    "AUTOMATICALLY_APPROVE",
    "MANUALLY_REVIEW",
    "REQUEST_RETURN",
    "ADD_TO_PARTICIPANT_GROUP",
    "REMOVE_FROM_PARTICIPANT_GROUP",
    "DYNAMIC_PAYMENT",
    "FIXED_SCREEN_OUT_PAYMENT",
}
SUBMISSION_STATUSES = {
    "ACTIVE",
    "AWAITING_REVIEW",
    "APPROVED",
    "REJECTED",
    "RETURNED",
    "SCREENED_OUT",
    "TIMED-OUT",
    "PARTIALLY APPROVED",
    "PROCESSING",
}
REJECTION_CATEGORIES = {
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
}
STUDY_TRANSITIONS = {
    "PUBLISH": ({"UNPUBLISHED"}, "ACTIVE"),
    "PAUSE": ({"ACTIVE"}, "PAUSED"),
    "START": ({"PAUSED"}, "ACTIVE"),
    "STOP": ({"ACTIVE", "PAUSED"}, "AWAITING REVIEW"),
}
MIN_REJECTION_MESSAGE = 100
DROP = object()  # carry the request out, then close the connection without answering


# The filter ids this fake accepts: the audience filters Rostrum sends, spelt as Prolific's API
# spells them (docs/decisions.md, "Prolific API", says where each was checked). A real account
# lists many more (GET /filters/); any other id is refused here as Prolific refuses an unknown one.
GROUP_FILTERS = ("participant_group_allowlist", "participant_group_blocklist")
STUDY_FILTERS = ("previous_studies_allowlist", "previous_studies_blocklist")
FILTER_IDS = frozenset(GROUP_FILTERS + STUDY_FILTERS + ("custom_allowlist", "custom_blocklist"))


def new_id() -> str:
    """A Prolific-shaped id: 24 hexadecimal characters."""
    return secrets.token_hex(12)


def error(status: int, title: str, detail: Any) -> dict[str, Any]:
    return {"error": {"status": status, "error_code": status * 1000 + 100, "title": title, "detail": detail}}


class Refused(Exception):
    """An answer other than 200: (status, payload)."""

    def __init__(self, status: int, title: str, detail: Any = "") -> None:
        super().__init__(title)
        self.status, self.payload = status, error(status, title, detail)


def invalid(detail: dict[str, list[str]]) -> Refused:
    return Refused(400, "Bad request", detail)


@dataclasses.dataclass
class Scripted:
    """What the next `times` requests matching (method, path pattern) get instead of an answer."""

    method: str
    pattern: re.Pattern[str]
    status: int | None
    retry_after: str | None
    drop: bool
    times: int


class FakeProlific:
    """The ASGI application and Prolific's side of the world (studies, submissions, bonuses)."""

    def __init__(self, token: str = "fake-prolific-token", page_size: int = 50) -> None:
        self.token = token
        self.page_size = page_size
        self.base = ""  # the server's origin (set when it starts), for absolute next-page links
        self.lock = threading.Lock()
        self.studies: dict[str, dict[str, Any]] = {}
        self.submissions: dict[str, dict[str, Any]] = {}
        self.bulks: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, dict[str, Any]] = {}  # participant groups: id -> {id, name, members}
        self.pay_calls: Counter[str] = Counter()  # bulk bonus payment id -> pay calls received
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request, in order
        self.headers_seen: list[dict[str, str]] = []
        self._scripts: list[Scripted] = []

    # --- What tests do on Prolific's side ----------------------------------------------------

    def script(
        self,
        method: str,
        path: str,
        *,
        status: int | None = None,
        retry_after: str | None = None,
        drop: bool = False,
        times: int = 1,
    ) -> None:
        """The next `times` requests of `method` whose path (after /api/v1) matches the regular
        expression `path` get `status` (with `Retry-After` if given), or with `drop` are carried
        out and then left unanswered (the connection closes)."""
        with self.lock:
            self._scripts.append(Scripted(method, re.compile(path), status, retry_after, drop, times))

    def study_add(
        self, study_id: str | None = None, *, status: str = "ACTIVE", **fields: Any
    ) -> dict[str, Any]:
        """A study made on Prolific's site (not through the API), e.g. the one a test study names."""
        study = {"id": study_id or new_id(), "status": status, "internal_name": "", "name": "", **fields}
        with self.lock:
            self.studies[study["id"]] = study
        return study

    def submission_add(
        self, study_id: str, *, participant_id: str | None = None, status: str = "ACTIVE", **fields: Any
    ) -> dict[str, Any]:
        """A participant takes a place in a study (the submission id is their SESSION_ID)."""
        submission = {
            "id": fields.pop("id", None) or new_id(),
            "study_id": study_id,
            "participant_id": participant_id or new_id(),
            "status": status,
            "started_at": "2026-01-01T10:00:00Z",
            "completed_at": None,
            "entered_code": fields.pop("entered_code", ""),
            "bonus_payments": [],
            **fields,
        }
        with self.lock:
            self.submissions[submission["id"]] = submission
        return submission

    def submission_set(self, submission_id: str, status: str, **fields: Any) -> None:
        """Prolific changes a submission (the participant returns, times out, submits a code…)."""
        with self.lock:
            self.submissions[submission_id].update(status=status, **fields)

    def pays(self) -> int:
        """Pay calls received, all bulk payments together."""
        with self.lock:
            return sum(self.pay_calls.values())

    # --- ASGI ---------------------------------------------------------------------------------

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if body is None:
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = parse_qs(scope.get("query_string", b"").decode())
        status, payload, extra = self.handle(scope["method"], scope["path"], query, headers, body)
        if payload is DROP:  # the head of an answer, then the connection closes: the client never
            # learns what happened (returning without starting would make uvicorn answer 500)
            head = [(b"content-type", b"application/json"), (b"content-length", b"100")]
            await send({"type": "http.response.start", "status": 200, "headers": head})
            return
        data = json.dumps(payload).encode()
        response_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
        ]
        response_headers += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": data})

    def handle(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, payload or DROP, extra headers) for one request."""
        route = path.removeprefix("/api/v1")
        with self.lock:
            self.requests.append((method, route))
            self.headers_seen.append(headers)
        if headers.get("authorization") != f"Token {self.token}":
            return 401, error(401, "Unauthorized", "Invalid token."), {}
        scripted = self._scripted(method, route)
        if scripted is not None and not scripted.drop:
            extra = {"Retry-After": scripted.retry_after} if scripted.retry_after is not None else {}
            title = "Too many requests" if scripted.status == 429 else "Scripted failure"
            return scripted.status or 500, error(scripted.status or 500, title, "Try again later."), extra
        try:
            payload = json.loads(body) if body else {}
            if not isinstance(payload, dict):
                raise invalid({"non_field_errors": ["Expected a JSON object."]})
            with self.lock:
                status, answer = self.route(method, route, query, payload)
        except ValueError:
            status, answer = 400, error(400, "Bad request", "The body is not JSON.")
        except Refused as refused:
            status, answer = refused.status, refused.payload
        if scripted is not None:  # carried out, then the answer is lost
            return status, DROP, {}
        return status, answer, {}

    def _scripted(self, method: str, route: str) -> Scripted | None:
        with self.lock:
            for scripted in self._scripts:
                if scripted.times > 0 and scripted.method == method and scripted.pattern.search(route):
                    scripted.times -= 1
                    return scripted
        return None

    # --- Routes (called with the lock held) ----------------------------------------------------

    def route(self, method: str, route: str, query: dict[str, list[str]], body: dict) -> tuple[int, Any]:
        for verb, pattern, handler in self._routes():
            match = re.fullmatch(pattern, route)
            if match and verb == method:
                return handler(*match.groups(), body=body, query=query)
        raise Refused(404, "Not found", f"No route {method} {route}.")

    def _routes(self):
        return [
            ("POST", r"/studies/", self.study_create),
            ("GET", r"/studies/", self.study_list),
            ("GET", r"/studies/([0-9a-f]{24})/", self.study_get),
            ("POST", r"/studies/([0-9a-f]{24})/transition/", self.study_transition),
            ("GET", r"/studies/([0-9a-f]{24})/submissions/", self.submission_list),
            ("POST", r"/submissions/bulk-approve/", self.bulk_approve),
            ("POST", r"/submissions/bonus-payments/", self.bonus_setup),
            ("GET", r"/submissions/([0-9a-f]{24})/", self.submission_get),
            ("POST", r"/submissions/([0-9a-f]{24})/transition/", self.submission_transition),
            ("POST", r"/bulk-bonus-payments/([0-9a-f]{24})/pay/", self.bonus_pay),
            ("POST", r"/participant-groups/", self.group_create),
            ("GET", r"/participant-groups/", self.group_list),
            ("POST", r"/participant-groups/([0-9a-f]{24})/participants/", self.group_add),
            ("DELETE", r"/participant-groups/([0-9a-f]{24})/participants/", self.group_remove),
            ("GET", r"/participant-groups/([0-9a-f]{24})/participants/", self.group_members),
        ]

    def study_create(self, *, body: dict, query) -> tuple[int, Any]:
        problems = study_problems(body)
        problems.update(self._filter_problems(body.get("filters", [])))
        if problems:
            raise invalid(problems)
        study = {**body, "id": new_id(), "status": "UNPUBLISHED", "date_created": "2026-01-01T09:00:00Z"}
        self.studies[study["id"]] = study
        return 201, study

    def study_list(self, *, body, query) -> tuple[int, Any]:
        return 200, {"results": list(self.studies.values()), "_links": {"next": {"href": None}}}

    def study_get(self, study_id: str, *, body, query) -> tuple[int, Any]:
        return 200, self._study(study_id)

    def study_transition(self, study_id: str, *, body: dict, query) -> tuple[int, Any]:
        study = self._study(study_id)
        action = body.get("action")
        if action not in STUDY_TRANSITIONS:
            raise invalid({"action": [f"Not a valid choice: {action!r}."]})
        allowed, after = STUDY_TRANSITIONS[action]
        if study["status"] not in allowed:
            raise invalid({"action": [f"A study in status {study['status']} cannot {action}."]})
        study["status"] = after
        return 200, study

    def submission_list(self, study_id: str, *, body, query) -> tuple[int, Any]:
        self._study(study_id)
        rows = [self._listed(s) for s in self.submissions.values() if s["study_id"] == study_id]
        page = int((query.get("page") or ["1"])[0])
        start = (page - 1) * self.page_size
        more = start + self.page_size < len(rows)
        href = f"{self.base}/api/v1/studies/{study_id}/submissions/?page={page + 1}" if more else None
        return 200, {
            "results": rows[start : start + self.page_size],
            "_links": {"next": {"href": href}},
            "meta": {"count": len(rows)},
        }

    def submission_get(self, submission_id: str, *, body, query) -> tuple[int, Any]:
        return 200, dict(self._submission(submission_id))

    def submission_transition(self, submission_id: str, *, body: dict, query) -> tuple[int, Any]:
        submission = self._submission(submission_id)
        action = body.get("action")
        if action not in ("APPROVE", "REJECT"):
            raise invalid({"action": [f"Not a valid choice: {action!r}."]})
        if submission["status"] != "AWAITING_REVIEW":
            raise invalid({"action": [f"A submission in status {submission['status']} cannot be reviewed."]})
        if action == "REJECT":
            problems = {}
            if len(str(body.get("message") or "")) < MIN_REJECTION_MESSAGE:
                problems["message"] = [f"Ensure this field has at least {MIN_REJECTION_MESSAGE} characters."]
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                problems["rejection_category"] = ["This field is required and must be a valid choice."]
            if problems:
                raise invalid(problems)
        submission["status"] = "APPROVED" if action == "APPROVE" else "REJECTED"
        return 200, dict(submission)

    def bulk_approve(self, *, body: dict, query) -> tuple[int, Any]:
        study_id, ids = body.get("study_id"), body.get("submission_ids")
        self._study(str(study_id))
        if not isinstance(ids, list) or not ids:
            raise invalid({"submission_ids": ["A non-empty list is required."]})
        chosen = [self.submissions.get(i) for i in ids]
        if any(s is None or s["study_id"] != study_id or s["status"] != "AWAITING_REVIEW" for s in chosen):
            raise invalid({"submission_ids": ["Every submission must be of the study and awaiting review."]})
        for submission in chosen:
            submission["status"] = "APPROVED"
        return 200, {"message": "The request to bulk approve has been made successfully."}

    def bonus_setup(self, *, body: dict, query) -> tuple[int, Any]:
        study_id = str(body.get("study_id"))
        self._study(study_id)
        rows, problems = [], []
        for number, line in enumerate(str(body.get("csv_bonuses") or "").strip().splitlines(), start=1):
            who, _, amount = line.partition(",")
            submission = next(
                (
                    s
                    for s in self.submissions.values()
                    if s["study_id"] == study_id and who.strip() in (s["participant_id"], s["id"])
                ),
                None,
            )
            cents = _cents(amount)
            if submission is None or cents is None:
                problems.append(f"Line {number}: an id of the study's participants and an amount like 1.50.")
            else:
                rows.append((submission["id"], cents))
        if problems or not rows:
            raise invalid({"csv_bonuses": problems or ["No bonus given."]})
        bulk_id = new_id()
        total = sum(c for _, c in rows)
        self.bulks[bulk_id] = {"id": bulk_id, "study": study_id, "rows": rows}
        return 201, {
            "id": bulk_id,
            "study": study_id,
            "amount": total,
            "fees": total // 3,
            "total_amount": total,
        }

    def bonus_pay(self, bulk_id: str, *, body, query) -> tuple[int, Any]:
        bulk = self.bulks.get(bulk_id)
        if bulk is None:
            raise Refused(404, "Not found", "No such bulk bonus payment.")
        self.pay_calls[bulk_id] += 1  # not idempotent: each call pays again
        for submission_id, cents in bulk["rows"]:
            self.submissions[submission_id]["bonus_payments"].append(cents)
        return 202, {}

    def group_create(self, *, body: dict, query) -> tuple[int, Any]:
        name, ids = body.get("name"), body.get("participant_ids", [])
        problems = {}
        if not isinstance(name, str) or not name.strip():
            problems["name"] = ["This field is required."]
        if not _ids(ids):
            problems["participant_ids"] = ["A list of participant ids."]
        if problems:
            raise invalid(problems)
        group = {"id": new_id(), "name": name, "workspace_id": body.get("workspace_id"), "members": []}
        self.groups[group["id"]] = group
        self._group_join(group, ids)
        return 201, self._group_shown(group)

    def group_list(self, *, body, query) -> tuple[int, Any]:
        rows = [self._group_shown(g) for g in self.groups.values()]
        return 200, {"results": rows, "_links": {"next": {"href": None}}}

    def group_add(self, group_id: str, *, body: dict, query) -> tuple[int, Any]:
        group = self._group(group_id)
        ids = body.get("participant_ids", [])
        if not _ids(ids):
            raise invalid({"participant_ids": ["A list of participant ids."]})
        self._group_join(group, ids)
        return 200, {"results": [{"participant_id": pid} for pid in group["members"]]}

    def group_remove(self, group_id: str, *, body: dict, query) -> tuple[int, Any]:
        group = self._group(group_id)
        ids = body.get("participant_ids", [])
        if not _ids(ids):
            raise invalid({"participant_ids": ["A list of participant ids."]})
        group["members"] = [pid for pid in group["members"] if pid not in set(ids)]
        return 200, {"results": [{"participant_id": pid} for pid in group["members"]]}

    def group_members(self, group_id: str, *, body, query) -> tuple[int, Any]:
        group = self._group(group_id)
        rows = [{"participant_id": pid} for pid in group["members"]]
        return 200, {"results": rows, "_links": {"next": {"href": None}}}

    def _group(self, group_id: str) -> dict[str, Any]:
        if group_id not in self.groups:
            raise Refused(404, "Not found", "No such participant group.")
        return self.groups[group_id]

    @staticmethod
    def _group_join(group: dict[str, Any], ids: list[str]) -> None:
        group["members"] += [pid for pid in dict.fromkeys(ids) if pid not in group["members"]]

    @staticmethod
    def _group_shown(group: dict[str, Any]) -> dict[str, Any]:
        shown = {k: group[k] for k in ("id", "name", "workspace_id")}
        return {**shown, "participant_count": len(group["members"])}

    def _filter_problems(self, filters: Any) -> dict[str, list[str]]:
        """What Prolific refuses in a study's filters: not a list of {filter_id, selected_values}, a
        filter id it does not know, or a group or study filter naming a group or study that does
        not exist."""
        ok = isinstance(filters, list) and all(
            isinstance(f, dict) and isinstance(f.get("filter_id"), str) and _ids(f.get("selected_values"))
            for f in filters
        )
        if not ok:
            return {"filters": ["A list of {filter_id, selected_values}."]}
        problems = [
            f"No filter with id {f['filter_id']!r}." for f in filters if f["filter_id"] not in FILTER_IDS
        ]
        known = {**dict.fromkeys(GROUP_FILTERS, self.groups), **dict.fromkeys(STUDY_FILTERS, self.studies)}
        for f in filters:
            unknown = [
                v for v in f["selected_values"] if f["filter_id"] in known and v not in known[f["filter_id"]]
            ]
            if unknown:
                kind = "participant group" if f["filter_id"] in GROUP_FILTERS else "study"
                problems.append(f"No such {kind}: {', '.join(unknown)}.")
        return {"filters": problems} if problems else {}

    def _study(self, study_id: str) -> dict[str, Any]:
        if study_id not in self.studies:
            raise Refused(404, "Not found", "No such study.")
        return self.studies[study_id]

    def _submission(self, submission_id: str) -> dict[str, Any]:
        if submission_id not in self.submissions:
            raise Refused(404, "Not found", "No such submission.")
        return self.submissions[submission_id]

    @staticmethod
    def _listed(submission: dict[str, Any]) -> dict[str, Any]:
        keep = ("id", "participant_id", "status", "started_at", "completed_at", "study_id")
        return {**{k: submission[k] for k in keep}, "study_code": submission["entered_code"]}


def study_problems(body: dict) -> dict[str, list[str]]:
    """What Prolific refuses in a new study, by field."""
    problems: dict[str, list[str]] = {}

    def need(field: str, ok: bool, message: str) -> None:
        if not ok:
            problems.setdefault(field, []).append(message)

    for field in ("name", "description", "internal_name"):
        need(field, isinstance(body.get(field), str) and bool(body[field].strip()), "This field is required.")
    url = body.get("external_study_url")
    need(
        "external_study_url", isinstance(url, str) and url.startswith(("http://", "https://")), "Enter a URL."
    )
    if body.get("prolific_id_option") == "url_parameters" and isinstance(url, str):
        missing = [p for p in PLACEHOLDERS if p not in url]
        need("external_study_url", not missing, f"The URL lacks {', '.join(missing)}.")
    codes = body.get("completion_codes")
    need("completion_codes", isinstance(codes, list) and bool(codes), "At least one completion code.")
    for code in codes if isinstance(codes, list) else []:
        actions = code.get("actions") if isinstance(code, dict) else None
        ok = (
            isinstance(code, dict)
            and bool(str(code.get("code") or "").strip())
            and code.get("code_type") in CODE_TYPES
            and isinstance(actions, list)
            and all(isinstance(a, dict) and a.get("action") in CODE_ACTIONS for a in actions)
        )
        need("completion_codes", ok, f"Not a valid completion code: {code!r}.")
    if isinstance(codes, list):
        values = [c.get("code") for c in codes if isinstance(c, dict)]
        need("completion_codes", len(values) == len(set(values)), "Each code must be different.")
    for field in ("total_available_places", "estimated_completion_time", "reward", "maximum_allowed_time"):
        value = body.get(field)
        need(
            field,
            isinstance(value, int) and not isinstance(value, bool) and value >= 1,
            "A whole number, 1 or more.",
        )
    estimate, maximum = body.get("estimated_completion_time"), body.get("maximum_allowed_time")
    if isinstance(estimate, int) and isinstance(maximum, int) and estimate >= 1:
        least = 2 + estimate + 2 * math.sqrt(estimate)
        need("maximum_allowed_time", maximum >= least, f"At least {least:.1f} minutes for this estimate.")
    return problems


def _ids(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(v, str) and v for v in values)


def _cents(amount: str) -> int | None:
    try:
        value = Decimal(amount.strip())
    except InvalidOperation:
        return None
    if value <= 0 or value != value.quantize(Decimal("0.01")):
        return None
    return int(value * 100)


# --- Running it ------------------------------------------------------------------------------


class FakeProlificServer(ThreadedServer):
    """uvicorn serving a FakeProlific in a background thread; a context manager."""

    name = "fake Prolific"

    def __init__(
        self, application: FakeProlific | None = None, port: int = 0, host: str = "127.0.0.1"
    ) -> None:
        super().__init__(application or FakeProlific(), port, host)

    @property
    def api_url(self) -> str:
        """What PROLIFIC_API_URL is set to."""
        return f"{self.url}/api/v1"

    def started(self) -> None:
        self.app.base = self.url


def run_in_thread(port: int = 0, application: FakeProlific | None = None) -> FakeProlificServer:
    """A started server (a fresh FakeProlific unless one is given)."""
    return FakeProlificServer(application, port).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A fake of Prolific's researcher API, on loopback.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8998)
    parser.add_argument("--token", default="fake-prolific-token", help="the API token it accepts")
    args = parser.parse_args(argv)
    application = FakeProlific(token=args.token)
    application.base = f"http://{args.host}:{args.port}"
    uvicorn.Server(uvicorn_config(application, args.host, args.port)).run()


if __name__ == "__main__":
    main()
