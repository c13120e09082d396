"""A pilot of a study: N simulated participants walk it on a running server, then the study's
report is computed on their data only, with the pages where they got stuck or failed checks.

The walk goes through the server only (`pilots.walker`): the link carries a pilot token
signed with the server's SECRET_KEY (`participants.services.pilot_token`), so the server
marks them as pilots (never holding a place, left out of the real data) and lets them into a
draft study. The database is read only after the walk: which pilots ended how, which of
their check answers failed, and the report (`analysis.reports.analyze_study(pilots=...)`).
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
from pilots.walker import Outcome, SimulatedParticipant
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

    def line(self) -> str:
        parts = []
        if self.stuck:
            parts.append(f"{self.stuck} stuck")
        if self.failed_checks:
            parts.append(f"{self.failed_checks} failed check{'s' if self.failed_checks > 1 else ''}")
        why = "; ".join(f"{reason} ×{n}" for reason, n in sorted(self.reasons.items()))
        return f"step {self.position} {self.title!r} ({self.kind}): {', '.join(parts)} — {why}"


@dataclass
class PilotResult:
    study: str
    policy: str
    outcomes: list[Outcome]
    problems: list[Problem]
    endings: dict[str, int]
    statuses: dict[str, int]
    exclusions: dict[str, int] = field(default_factory=dict)  # active exclusions of the pilots, by reason
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
        person = SimulatedParticipant(
            base_url,
            study.slug,
            rng,
            policy,
            pilot_token=token,
            study_id=study.prolific_study_id,
            attentive=attentive,
        )
        try:
            outcome = person.run()
        finally:
            close_old_connections()  # the LLM policy's call log writes from this thread
        if progress:
            progress(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="pilot") as pool:
        return list(pool.map(one, seeded(seed, participants)))


def problems_of(study: Study, outcomes: list[Outcome], pilots: list[Participant]) -> list[Problem]:
    """Where the pilots got stuck (from their walks) and failed checks (their stored answers)."""
    steps = {s.position: s for s in study_steps(study)}
    found: dict[int | str, Problem] = {}

    def at(position: int | str, title: str = "", kind: str = "") -> Problem:
        key = int(position) if str(position).isdigit() else position
        if key not in found:
            step = steps.get(key) if isinstance(key, int) else None
            found[key] = Problem(key, step.title if step else title, step.kind if step else kind)
        return found[key]

    for outcome in outcomes:
        if outcome.stuck is not None:
            problem = at(outcome.stuck.position, outcome.stuck.title, outcome.stuck.kind)
            problem.stuck += 1
            reason = outcome.stuck.reason
            problem.reasons[reason] = problem.reasons.get(reason, 0) + 1
    failed = Response.objects.filter(participant__in=pilots, is_check=True, passed=False)
    for position, key in failed.values_list("position", "key"):
        problem = at(position)
        problem.failed_checks += 1
        reason = f"failed check {key}"
        problem.reasons[reason] = problem.reasons.get(reason, 0) + 1
    comparisons = Comparison.objects.filter(participant__in=pilots, is_check=True, check_passed=False)
    for (position,) in comparisons.values_list("position"):
        problem = at(position)
        problem.failed_checks += 1
        problem.reasons["failed comparison check"] = problem.reasons.get("failed comparison check", 0) + 1
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
    pilots = list(
        Participant.objects.filter(study=study, is_pilot=True, prolific_pid__in=[o.pid for o in outcomes])
    )
    result = PilotResult(
        study=study.slug,
        policy=policy,
        outcomes=outcomes,
        problems=problems_of(study, outcomes, pilots),
        endings=dict(Counter(o.code or "stuck" for o in outcomes)),
        statuses=dict(Counter(p.status for p in pilots)),
        exclusions=dict(
            Counter(
                Exclusion.objects.filter(participant__in=pilots, revoked_at__isnull=True).values_list(
                    "reason", flat=True
                )
            )
        ),
        notes=list(getattr(chosen, "calls", [])),
    )
    folder = out or default_out(study)
    folder.mkdir(parents=True, exist_ok=True)
    if report:
        try:
            analyze_study(study, folder, pilots=[p.pk for p in pilots])
        except Exception as error:  # the pilot's findings are kept; the report says why it failed
            result.report_error = f"{type(error).__name__}: {error}"
    result.report_dir = folder
    (folder / "pilot.json").write_text(
        json.dumps(result.summary(), indent=1, ensure_ascii=False, default=str)
    )
    return result
