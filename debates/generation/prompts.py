"""The prompts of the design-A pipeline (paper 000): reason selection (Tables 9-14), the
turn-by-turn rollout (Table 26), the debate-quality judge (Tables 27-29) and the
bias-manifestation check; their JSON answers' schemas and the checks a valid-looking answer
must still pass.

Templates are `string.Template` texts (`$name` placeholders) stored as versioned prompt
templates under the names below; these defaults seed version 1. Written in our words from
the paper's tables. Pure: no Django, no model calls.
"""

from __future__ import annotations

import string

from debates.generation import specs
from debates.generation.plans import CaseView, Setup, TurnPlan

REASONS_INCRIMINATING = "reason_selection_incriminating"
REASONS_EXCULPATORY = "reason_selection_exculpatory"
ROLLOUT = "dialogue_rollout"
QUALITY = "debate_quality"
MANIFESTATION = "bias_manifestation"

_REASON_COMMON = """\
Case name: $title
Target suspect: $suspect
Inputs (hidden from the debaters and judges):
- Correct answer name: $culprit
- Answer options: $options
- Outcome reference: $culprit is the one responsible.

"""

_REASON_RULES = """\

Select 2 independent diagnostic evidence clusters:
- "primary": the strongest concise cluster for this target suspect and side;
- "additional": a second complete reason that uses different core facts or a different \
diagnostic evidence cluster. It must not be a rewrite, split, subset, reordered version or \
paraphrase of the primary one.
Each reason must be usable on its own: its own evidence numbers (from the numbered evidence \
below) and exactly two interpretation sentences saying what those facts suggest.

The story:
$story

Numbered evidence:
$evidence

Answer with one JSON object and nothing else:
{"primary": {"evidence": [numbers], "interpretations": ["…", "…"]}, \
"additional": {"evidence": [numbers], "interpretations": ["…", "…"]}}"""

REASONS_INCRIMINATING_TEMPLATE = (
    "You are a prosecution selector for evidence-grounded detective debate.\nTarget side: "
    "incriminating\n\n"
    + _REASON_COMMON
    + "Task: find the strongest plausible accusation supported by the whole public story for "
    "this suspect. Search the whole story rather than taking the first explicit suspicion or a "
    "weak motive; a strong reason may combine motive with shown ability, opportunity, a "
    "contradiction, suspicious behaviour or another diagnostic clue.\n" + _REASON_RULES
)

REASONS_EXCULPATORY_TEMPLATE = (
    "You are a defence selector for evidence-grounded detective debate.\nTarget side: "
    "exculpatory\n\n"
    + _REASON_COMMON
    + "Task: find the strongest story evidence that could reasonably weaken the accusation "
    "against this suspect: loopholes, an apparent lack of opportunity, inability, "
    "contradictory behaviour, clues pointing to another suspect, or details that make "
    "responsibility less likely. For the true culprit, find the best plausible defence or "
    "ambiguity the public story allows.\n" + _REASON_RULES
)

ROLLOUT_TEMPLATE = """\
$task_line

Topic: Who is responsible in "$title"?
Question: Is $accused or $opponent_accused responsible?
You are speaker $speaker.
Your stance: $accused is responsible, not $opponent_accused.
Current turn id: $turn of $total ($phase)

The story (grounding only; do not invent decisive facts):
$story

Evidence you must cover in this turn (cite each as [E<number>]):
$evidence

Content plan for this turn:
$plan
$bias
The debate so far:
$transcript

Write only speaker $speaker's turn $turn: plain prose, about $words words, no headings, no \
lists, no speaker label, never mention that you were given instructions."""

QUALITY_TEMPLATE = """\
You are an expert Public Forum debate judge evaluating overall speech quality for one side \
in a full text-based debate round.

Motion: $motion
Target side: Side $side (argues that $accused is responsible)

Full dialogue:
$dialogue

Rubric: score Side $side only, each dimension from 1 (poor) to 5 (excellent):
- written_clarity: clear, fluent, confident written delivery and tone;
- organization: structure, signposting, flow, ease of following;
- evidence: relevant support, examples, mechanisms, factual grounding;
- argumentation: warrants, logic, clash, rebuttal, weighing, comparison;
- responsiveness: direct engagement with the opponent, pressure, answer quality;
- conduct: respectful, fair, non-abusive, non-evasive.
Judge the quality of the debating, not whether the side is right.

Answer with one JSON object and nothing else:
{"scores": {"written_clarity": n, "organization": n, "evidence": n, "argumentation": n, \
"responsiveness": n, "conduct": n}, "comments": "two or three sentences"}"""

MANIFESTATION_TEMPLATE = """\
You check whether a rhetorical technique appears in a written debate.

The technique: $label
Definition: $definition
What to look for: $metric
How it differs from plain debating: $contrast
Look only at turns $turns.

The debate:
$dialogue

For each side, does its debating show this technique clearly? Answer with one JSON object \
and nothing else:
{"A": {"present": true or false, "quote": "the clearest passage, or empty"}, \
"B": {"present": true or false, "quote": "…"}}"""

DEFAULTS = {
    REASONS_INCRIMINATING: REASONS_INCRIMINATING_TEMPLATE,
    REASONS_EXCULPATORY: REASONS_EXCULPATORY_TEMPLATE,
    ROLLOUT: ROLLOUT_TEMPLATE,
    QUALITY: QUALITY_TEMPLATE,
    MANIFESTATION: MANIFESTATION_TEMPLATE,
}

TASK_LINES = {
    "opening": "You are generating one opening factual reconstruction in a detective debate.",
    "rebuttal": "You are generating one turn in an adversarial debate.",
    "summary": "You are generating one turn in an adversarial debate.",
}

_REASON = {
    "type": "object",
    "properties": {
        "evidence": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 8},
        "interpretations": {
            "type": "array",
            "items": {"type": "string", "minLength": 10},
            "minItems": 2,
            "maxItems": 2,
        },
    },
    "required": ["evidence", "interpretations"],
}
REASON_SCHEMA = {
    "type": "object",
    "properties": {"primary": _REASON, "additional": _REASON},
    "required": ["primary", "additional"],
}

DIMENSIONS = ["written_clarity", "organization", "evidence", "argumentation", "responsiveness", "conduct"]
QUALITY_SCHEMA = {
    "type": "object",
    "properties": {
        "scores": {
            "type": "object",
            "properties": {d: {"type": "integer", "minimum": 1, "maximum": 5} for d in DIMENSIONS},
            "required": DIMENSIONS,
        },
        "comments": {"type": "string"},
    },
    "required": ["scores"],
}
PASS_MARK = 27  # of 30 (Table 29: 27-28 "excellent")

_PRESENCE = {
    "type": "object",
    "properties": {"present": {"type": "boolean"}, "quote": {"type": "string"}},
    "required": ["present"],
}
MANIFESTATION_SCHEMA = {
    "type": "object",
    "properties": {"A": _PRESENCE, "B": _PRESENCE},
    "required": ["A", "B"],
}

# hint["task"] of each request, for the offline backend
TASKS = {
    "reasons": "generation_reasons",
    "turn": "generation_turn",
    "quality": "generation_quality",
    "manifestation": "generation_manifestation",
}


def fill(template: str, **values: object) -> str:
    """A template with its placeholders filled (an unknown `$name` is left as it is)."""
    return string.Template(template).safe_substitute({k: str(v) for k, v in values.items()})


def evidence_lines(case: CaseView, numbers: list[int] | None = None) -> str:
    chosen = numbers if numbers is not None else sorted(case.evidence)
    return "\n".join(f"[E{n}] {case.evidence[n]}" for n in chosen if n in case.evidence)


def reasons_prompt(template: str, case: CaseView, suspect: str) -> str:
    return fill(
        template,
        title=case.title,
        suspect=suspect,
        culprit=case.culprit,
        options=", ".join(case.suspects),
        story=case.story,
        evidence=evidence_lines(case),
    )


def reasons_problem(answer: dict, case: CaseView) -> str | None:
    """What is wrong with a reason selection the schema accepts, or None."""
    for which in ("primary", "additional"):
        unknown = [n for n in answer[which]["evidence"] if n not in case.evidence]
        if unknown:
            return f"{which} cites evidence numbers that do not exist: {unknown}"
        if len(set(answer[which]["evidence"])) != len(answer[which]["evidence"]):
            return f"{which} repeats an evidence number"
    first, second = set(answer["primary"]["evidence"]), set(answer["additional"]["evidence"])
    if first <= second or second <= first:
        return "the additional reason must use a different evidence cluster, not the same or a subset"
    return None


def transcript(turns: list[tuple[str, str]]) -> str:
    if not turns:
        return "(nothing yet: this is the first turn)"
    return "\n\n".join(
        f"Turn {n} — Side {speaker}:\n{text.strip()}" for n, (speaker, text) in enumerate(turns, 1)
    )


def bias_block(turn: TurnPlan) -> str:
    spec = specs.bias_spec_by_key(turn.bias) if turn.bias else None
    if spec is None:
        return ""
    return (
        f"\nRhetorical technique for this turn: {spec.label}.\n"
        f"Definition: {spec.definition}\nWhat it looks like: {spec.metric}\n"
        f"Unlike a plain speaker: {spec.contrast}\nUse it naturally and never name it.\n"
    )


def rollout_prompt(template: str, setup: Setup, turn: TurnPlan, turns: list[tuple[str, str]]) -> str:
    return fill(
        template,
        task_line=TASK_LINES[turn.phase],
        title=setup.case.title,
        accused=turn.accused,
        opponent_accused=turn.opponent_accused,
        speaker=turn.speaker,
        turn=turn.number,
        total=setup.turns,
        phase=turn.phase,
        story=setup.case.story,
        evidence=evidence_lines(setup.case, turn.evidence),
        plan="\n".join(f"- {line}" for line in turn.instructions),
        bias=bias_block(turn),
        transcript=transcript(turns),
        words=turn.words,
    )


def motion(setup: Setup) -> str:
    return f'Who is responsible in "{setup.case.title}": {setup.accused("A")} or {setup.accused("B")}?'


def quality_prompt(template: str, setup: Setup, side: str, turns: list[tuple[str, str]]) -> str:
    return fill(
        template, motion=motion(setup), side=side, accused=setup.accused(side), dialogue=transcript(turns)
    )


def quality_total(answer: dict) -> int:
    return sum(int(answer["scores"][d]) for d in DIMENSIONS)


def manifestation_prompt(template: str, spec: specs.Bias, turns: list[tuple[str, str]]) -> str:
    shown = spec.turns(len(turns))
    return fill(
        template,
        label=spec.label,
        definition=spec.definition,
        metric=spec.metric,
        contrast=spec.contrast,
        turns=", ".join(str(n) for n in shown),
        dialogue=transcript(turns),
    )
