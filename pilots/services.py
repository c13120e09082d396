"""A pilot of a study: N simulated participants walk it on a running server, then the study's
report is computed on their data only, with the pages where they got stuck or failed checks.

The walk goes through the server only (`pilots.walker`): the link carries a pilot token
signed with the server's SECRET_KEY (`participants.services.pilot_token`), so the server
marks them as pilots (never holding a place, left out of the real data) and lets them into a
draft study. The database is read only after the walk: each pilot's record (`pilot_record`:
how it ended, its status, exclusions and failed checks), the pages where they got stuck or
failed checks (`problems_in`, from the records) and the report
(`analysis.reports.analyze_study(pilots=...)`).

`manage.py pilot` runs the whole pilot here (`run_pilot`); the "pilot" job kind
(`pilots.jobs`) walks one simulated participant per item (`participant_walk`) and keeps its
record as the item's result, so both find the same problems from the same records.

A pilot's exclusion for reading speed is expected, not a problem of the study's pages: a
simulated participant answers at once, and the server times the dialogue page itself
(EXPECTED_EXCLUSIONS; docs/decisions.md, "Pilots").
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.db import close_old_connections
from django.utils import timezone

from analysis.reports import analyze_study
from debates import llm
from debates.call_log import llm_call_record
from debates.models import Comparison, LLMCall
from participants.models import Exclusion, Participant, Response
from participants.services import pilot_token
from pilots.policies import ScriptedPolicy, policy_named, seeded
from pilots.walker import Outcome, SimulatedParticipant, Stuck
from studies.models import Study
from studies.services import study_steps


@dataclass
class Problem:
    """A page where simulated participants got stuck or failed an attention check."""

    position: int | str
    title: str
    kind: str
    stuck: int = 0  # participants who got stuck on it
    failed_checks: int = 0  # failed check answers on it
    reasons: dict[str, int] = field(default_factory=dict)  # why, with counts

    def where(self) -> str:
        return f"step {self.position} {self.title!r} ({self.kind})"

    def why(self) -> str:
        return "; ".join(f"{reason} ×{n}" for reason, n in sorted(self.reasons.items()))

    def line(self) -> str:
        parts = []
        if self.stuck:
            parts.append(f"{self.stuck} stuck")
        if self.failed_checks:
            parts.append(f"{self.failed_checks} failed check{'s' if self.failed_checks > 1 else ''}")
        return f"{self.where()}: {', '.join(parts)} — {self.why()}"


# Exclusions every pilot may get by design, with why: never a problem of the study's pages.
EXPECTED_EXCLUSIONS = {
    Exclusion.Reason.WPM: (
        "expected of pilots: they answer at once instead of reading, and the server times the "
        "dialogue page itself, so they read 'too fast' for the study's cap"
    ),
}


# Checks that pilots fail by chance, by design, with why (their failures are still listed).
EXPECTED_FAILURES = {
    "recall": "expected of pilots now and then: they keep no memory of the debate, so they guess",
}


def failed_reason(key: str) -> str:
    """'failed check attention_1', saying why when pilots fail that check by design."""
    why = EXPECTED_FAILURES.get(key)
    return f"failed check {key} ({why})" if why else f"failed check {key}"


def exclusions_text(exclusions: dict[str, int]) -> str:
    """'wpm ×3 (expected of pilots: …)': the pilots' exclusions by reason, the expected ones
    saying why."""
    return "; ".join(
        f"{reason} ×{n}" + (f" ({EXPECTED_EXCLUSIONS[reason]})" if reason in EXPECTED_EXCLUSIONS else "")
        for reason, n in sorted(exclusions.items())
    )


def tally(records: list[dict]) -> dict[str, dict[str, int]]:
    """The pilots' endings (their codes, or "stuck"), statuses and active exclusions, counted."""
    return {
        "endings": dict(Counter(r["code"] or "stuck" for r in records)),
        "statuses": dict(Counter(r["status"] or "never entered" for r in records)),
        "exclusions": dict(Counter(reason for r in records for reason in r["exclusions"])),
    }


@dataclass
class PilotResult:
    study: str
    policy: str
    outcomes: list[Outcome]
    problems: list[Problem]
    endings: dict[str, int]
    statuses: dict[str, int]
    exclusions: dict[str, int] = field(default_factory=dict)  # active exclusions of the pilots, by reason
    records: list[dict] = field(default_factory=list)  # each pilot's `pilot_record`
    report_dir: Path | None = None
    report_error: str = ""
    notes: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "study": self.study,
            "policy": self.policy,
            "participants": len(self.outcomes),
            "endings": self.endings,
            "statuses": self.statuses,
            "exclusions": self.exclusions,
            "expected_exclusions": {r: why for r, why in EXPECTED_EXCLUSIONS.items() if r in self.exclusions},
            "problems": [asdict(p) for p in self.problems],
            "outcomes": [
                {**asdict(o), "stuck": asdict(o.stuck) if o.stuck else None, "code": o.code}
                for o in self.outcomes
            ],
            "report": str(self.report_dir) if self.report_dir else "",
            "report_error": self.report_error,
            "model_answers": self.notes,
        }


def default_out(study: Study) -> Path:
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return Path("var/pilots") / f"{study.slug}-{stamp}"


def walk(
    study: Study,
    *,
    participants: int,
    base_url: str,
    policy: ScriptedPolicy,
    concurrency: int = 4,
    seed: int = 1,
    attentive: float = 0.9,
    progress: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Walk `participants` pilots through the study on the server at `base_url`, at most
    `concurrency` at a time; their outcomes in order."""
    token = pilot_token(study)

    def one(rng) -> Outcome:
        try:
            outcome = participant_walk(
                study, base_url=base_url, rng=rng, policy=policy, token=token, attentive=attentive
            )
        finally:
            close_old_connections()  # the LLM policy's call log writes from this thread
        if progress:
            progress(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="pilot") as pool:
        return list(pool.map(one, seeded(seed, participants)))


def participant_walk(
    study: Study,
    *,
    base_url: str,
    rng,
    policy: ScriptedPolicy,
    token: str,
    attentive: float = 0.9,
    pid: str = "",
) -> Outcome:
    """One simulated participant's walk through the study (no database: the server only); a
    `pid` walked before resumes that participant where it was."""
    person = SimulatedParticipant(
        base_url,
        study.slug,
        rng,
        policy,
        pilot_token=token,
        study_id=study.prolific_study_id,
        attentive=attentive,
        pid=pid,
    )
    return person.run()


def pilot_record(study: Study, outcome: Outcome) -> dict:
    """One pilot's walk and what the server stored of it, as JSON: how it ended, its pages,
    where it got stuck, its status (empty if it never entered), its active exclusions and the
    checks it failed (with the step's position)."""
    participant = Participant.objects.filter(study=study, is_pilot=True, prolific_pid=outcome.pid).first()
    exclusions: list[str] = []
    failed: list[dict] = []
    if participant is not None:
        exclusions = list(
            Exclusion.objects.filter(participant=participant, revoked_at__isnull=True)
            .order_by("pk")
            .values_list("reason", flat=True)
        )
        answers = Response.objects.filter(participant=participant, is_check=True, passed=False)
        failed = [
            {"position": p, "reason": failed_reason(key)} for p, key in answers.values_list("position", "key")
        ]
        comparisons = Comparison.objects.filter(participant=participant, is_check=True, check_passed=False)
        failed += [
            {"position": p, "reason": "failed comparison check"}
            for p in comparisons.values_list("position", flat=True)
        ]
    return {
        "pid": outcome.pid,
        "participant": participant.pk if participant else None,
        "ending": outcome.ending,
        "code": outcome.code,
        "pages": outcome.pages,
        "stuck": asdict(outcome.stuck) if outcome.stuck else None,
        "status": participant.status if participant else "",
        "exclusions": exclusions,
        "failed_checks": failed,
        "notes": outcome.notes,
    }


def problems_in(study: Study | None, records: list[dict]) -> list[Problem]:
    """Where the pilots got stuck (from their walks) and failed checks (their stored answers),
    from their records; the steps' titles and kinds from the study as it is now."""
    steps = {s.position: s for s in study_steps(study)} if study is not None else {}
    found: dict[int | str, Problem] = {}

    def at(position: int | str, title: str = "", kind: str = "") -> Problem:
        key = int(position) if str(position).isdigit() else position
        if key not in found:
            step = steps.get(key) if isinstance(key, int) else None
            found[key] = Problem(key, step.title if step else title, step.kind if step else kind)
        return found[key]

    for record in records:
        if record["stuck"]:
            stuck = Stuck(**record["stuck"])
            problem = at(stuck.position, stuck.title, stuck.kind)
            problem.stuck += 1
            problem.reasons[stuck.reason] = problem.reasons.get(stuck.reason, 0) + 1
        for check in record["failed_checks"]:
            problem = at(check["position"])
            problem.failed_checks += 1
            problem.reasons[check["reason"]] = problem.reasons.get(check["reason"], 0) + 1
    return sorted(found.values(), key=lambda p: (not isinstance(p.position, int), p.position))


def call_recorder(study: Study):
    """Record the LLM policy's calls in the model call log, against the study."""

    def record(request: llm.LLMRequest, result, error) -> None:
        call = llm_call_record(role="pilot", config=None, request=request, result=result, error=error)
        LLMCall.objects.filter(pk=call.pk).update(study=study)

    return record


def run_pilot(
    study: Study,
    *,
    participants: int,
    base_url: str,
    policy: str = "scripted",
    model: str = "",
    concurrency: int = 4,
    seed: int = 1,
    attentive: float = 0.9,
    out: Path | None = None,
    report: bool = True,
    progress: Callable[[Outcome], None] | None = None,
) -> PilotResult:
    """The whole pilot: the walk, the problems, and the report of these pilots' data in `out`
    (with `pilot.json`, the summary)."""
    chosen = policy_named(policy, model=model, record=call_recorder(study))
    outcomes = walk(
        study,
        participants=participants,
        base_url=base_url,
        policy=chosen,
        concurrency=concurrency,
        seed=seed,
        attentive=attentive,
        progress=progress,
    )
    records = [pilot_record(study, outcome) for outcome in outcomes]
    counted = tally(records)
    result = PilotResult(
        study=study.slug,
        policy=policy,
        outcomes=outcomes,
        problems=problems_in(study, records),
        endings=counted["endings"],
        statuses={status: n for status, n in counted["statuses"].items() if status != "never entered"},
        exclusions=counted["exclusions"],
        records=records,
        notes=list(getattr(chosen, "calls", [])),
    )
    pilots = [r["participant"] for r in records if r["participant"]]
    folder = out or default_out(study)
    folder.mkdir(parents=True, exist_ok=True)
    if report:
        try:
            analyze_study(study, folder, pilots=pilots)
        except Exception as error:  # the pilot's findings are kept; the report says why it failed
            result.report_error = f"{type(error).__name__}: {error}"
    result.report_dir = folder
    (folder / "pilot.json").write_text(
        json.dumps(result.summary(), indent=1, ensure_ascii=False, default=str)
    )
    return result
