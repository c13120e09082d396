"""The model side of building one design-A dialogue: reason selection for a suspect, the
six-turn rollout, the quality judge on each side and the bias-manifestation check, with
regeneration (a new seed) until a dialogue passes or the attempts run out.

Every call goes through `calls` (a `debates.jobs.calls.Calls`: budgeted, logged, replayed
after a cut-short attempt); no database here, the kind (`debates.generation.kinds`) reads
and writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from debates import llm
from debates.generation import prompts, specs
from debates.generation.plans import CaseView, Setup, plan

ROLE_REASONS = "gen_reasons"
ROLE_TURN = "gen_turn"
ROLE_QUALITY = "gen_quality"
ROLE_MANIFESTATION = "gen_manifest"
VERBOSITY_RATIO = 1.25  # the verbose side's words at least this many times the other side's


@dataclass(frozen=True)
class ModelSpec:
    """A model as a job's configuration names it, with its prices (USD per million tokens)."""

    model: str
    temperature: float = 0.7
    price_in_per_mtok: Decimal | None = None
    price_out_per_mtok: Decimal | None = None

    @classmethod
    def from_config(cls, config: dict, prefix: str) -> ModelSpec:
        def price(name: str) -> Decimal | None:
            value = config.get(f"{prefix}_{name}")
            return None if value in (None, "") else Decimal(str(value))

        return cls(
            model=config[f"{prefix}_model"],
            temperature=float(config.get(f"{prefix}_temperature") or 0),
            price_in_per_mtok=price("price_in"),
            price_out_per_mtok=price("price_out"),
        )


@dataclass
class Templates:
    """The prompt template objects in use (each with `.text` and `.version`)."""

    by_name: dict[str, Any]

    def text(self, name: str) -> str:
        return self.by_name[name].text

    def versions(self) -> dict[str, int]:
        return {name: t.version for name, t in self.by_name.items()}


@dataclass
class Settings:
    generator: ModelSpec
    judge: ModelSpec
    max_tokens: int = 700
    attempts: int = 3
    pass_mark: int = prompts.PASS_MARK
    check_manifestation: bool = True
    seed: int = 0


@dataclass
class Attempt:
    number: int
    seed: int
    turns: list[tuple[str, str]] = field(default_factory=list)
    quality: dict[str, dict] = field(default_factory=dict)  # "A"/"B" -> scores, total, comments
    manifestation: dict = field(default_factory=dict)
    passed: bool = False
    why: str = ""

    @property
    def score(self) -> int:
        """The dialogue's quality: the weaker side's total (0 when not judged)."""
        totals = [q["total"] for q in self.quality.values()]
        return min(totals) if totals else 0

    def as_dict(self) -> dict:
        return {
            "attempt": self.number,
            "seed": self.seed,
            "turns": [list(t) for t in self.turns],
            "quality": self.quality,
            "manifestation": self.manifestation,
            "score": self.score,
            "passed": self.passed,
            "why": self.why,
        }


async def select_reasons(calls, templates: Templates, settings: Settings, case: CaseView, role: str) -> dict:
    """The suspect's reason record: incriminating and exculpatory, primary and additional."""
    suspect = case.suspect(role)
    record: dict[str, Any] = {"suspect": suspect, "role": role, "is_correct_answer": role == "culprit"}
    for side, name in (
        ("incriminating", prompts.REASONS_INCRIMINATING),
        ("exculpatory", prompts.REASONS_EXCULPATORY),
    ):
        text = prompts.reasons_prompt(templates.text(name), case, suspect)
        request = _request(
            settings.generator,
            text,
            settings,
            seed=specs.item_seed(settings.seed, f"{case.slug}:{role}:{side}", 0),
            hint={
                "task": prompts.TASKS["reasons"],
                "side": side,
                "suspect": suspect,
                "evidence": case.evidence,
            },
            temperature=0.0,
        )
        record[side] = await calls.json(
            request,
            prompts.REASON_SCHEMA,
            role=ROLE_REASONS,
            template=templates.by_name[name],
            prices=settings.generator,
            check=lambda answer: prompts.reasons_problem(answer, case),
        )
    return record


async def build(
    calls, templates: Templates, settings: Settings, setup: Setup, reasons: dict, key: str
) -> list[Attempt]:
    """Attempts at the dialogue, until one passes or `settings.attempts` were made."""
    made: list[Attempt] = []
    for number in range(1, settings.attempts + 1):
        attempt = Attempt(number, specs.item_seed(settings.seed, key, number))
        await _rollout(calls, templates, settings, setup, reasons, attempt)
        await judge(calls, templates, settings, setup, attempt)
        made.append(attempt)
        if attempt.passed:
            break
    return made


def best(attempts: list[Attempt]) -> Attempt:
    """The attempt to keep: the one that passed, else the one with the best quality."""
    return next((a for a in attempts if a.passed), None) or max(attempts, key=lambda a: (a.score, -a.number))


async def _rollout(calls, templates, settings, setup, reasons, attempt: Attempt) -> None:
    template = templates.by_name[prompts.ROLLOUT]
    for turn in plan(setup, reasons):
        text = prompts.rollout_prompt(template.text, setup, turn, attempt.turns)
        request = _request(
            settings.generator,
            text,
            settings,
            seed=attempt.seed + turn.number,
            hint={
                "task": prompts.TASKS["turn"],
                "turn": turn.as_dict(),
                "evidence": setup.case.evidence,
                "seed": attempt.seed,
            },
            max_tokens=max(settings.max_tokens, int(turn.words * 2.5)),
        )
        result = await calls.complete(request, role=ROLE_TURN, template=template, prices=settings.generator)
        body = result.text.strip()
        if not body:
            raise llm.LLMError(
                "bad_output", f"the model wrote nothing for turn {turn.number}", retryable=True
            )
        attempt.turns.append((turn.speaker, body))


async def judge(calls, templates, settings, setup: Setup, attempt: Attempt) -> None:
    """The quality judge on both sides and the manifestation check; sets passed and why."""
    template = templates.by_name[prompts.QUALITY]
    for side in ("A", "B"):
        text = prompts.quality_prompt(template.text, setup, side, attempt.turns)
        request = _request(
            settings.judge,
            text,
            settings,
            seed=settings.seed,
            hint={"task": prompts.TASKS["quality"], "side": side, "turns": attempt.turns},
        )
        answer = await calls.json(
            request, prompts.QUALITY_SCHEMA, role=ROLE_QUALITY, template=template, prices=settings.judge
        )
        attempt.quality[side] = {
            "scores": {d: int(answer["scores"][d]) for d in prompts.DIMENSIONS},
            "total": prompts.quality_total(answer),
            "comments": str(answer.get("comments", ""))[:1000],
        }
    low = [s for s in ("A", "B") if attempt.quality[s]["total"] < settings.pass_mark]
    attempt.manifestation = await _manifestation(calls, templates, settings, setup, attempt)
    reasons = [f"side {s} scored {attempt.quality[s]['total']}/30 (pass: {settings.pass_mark})" for s in low]
    if not attempt.manifestation.get("passed", True):
        reasons.append(attempt.manifestation.get("problem", "the intervention did not show"))
    attempt.passed = not reasons
    attempt.why = "; ".join(reasons)


async def _manifestation(calls, templates, settings, setup: Setup, attempt: Attempt) -> dict:
    """Whether the intervention shows on the active side and not on the other: the model's
    reading of the specification's metric, and for verbosity also the words counted."""
    condition = setup.condition
    if condition.bias == specs.BASELINE or not settings.check_manifestation:
        return {"checked": False, "passed": True}
    active, other = condition.active_letter, "B" if condition.active_letter == "A" else "A"
    spec = specs.bias_spec(condition.bias, setup.fallacy)
    template = templates.by_name[prompts.MANIFESTATION]
    request = _request(
        settings.judge,
        prompts.manifestation_prompt(template.text, spec, attempt.turns),
        settings,
        seed=settings.seed,
        hint={
            "task": prompts.TASKS["manifestation"],
            "bias": spec.key,
            "turns": attempt.turns,
            "spec_turns": spec.turns(len(attempt.turns)),
        },
    )
    answer = await calls.json(
        request,
        prompts.MANIFESTATION_SCHEMA,
        role=ROLE_MANIFESTATION,
        template=template,
        prices=settings.judge,
    )
    found = {"checked": True, "bias": spec.key, "active": active, "A": answer["A"], "B": answer["B"]}
    problems = []
    if not answer[active]["present"]:
        problems.append(f"{spec.label} did not show on the active side ({active})")
    if answer[other]["present"]:
        problems.append(f"{spec.label} also showed on the baseline side ({other})")
    if condition.bias == "verbosity":
        words = {s: sum(len(t.split()) for sp, t in attempt.turns if sp == s) for s in ("A", "B")}
        found["words"] = words
        if words[active] < VERBOSITY_RATIO * words[other]:
            problems.append(f"the verbose side wrote {words[active]} words against {words[other]}")
    found["passed"] = not problems
    found["problem"] = "; ".join(problems)
    return found


def _request(
    model: ModelSpec,
    text: str,
    settings: Settings,
    *,
    seed: int,
    hint: dict,
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> llm.LLMRequest:
    return llm.LLMRequest(
        model=model.model,
        messages=[{"role": "user", "content": text}],
        temperature=model.temperature if temperature is None else temperature,
        max_tokens=max_tokens or settings.max_tokens,
        seed=seed,
        hint=hint,
    )
