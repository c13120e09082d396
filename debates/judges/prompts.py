"""The LLM participant's prompt (paper 000, Table 30), the JSON answer it asks for, and the
judge models of a job's configuration.

Everything here is text and data: no database, no model calls. A dialogue is seen through a
`DialogueView` (what the prompt shows and what the result records about the dialogue), so the
prompt and the result can be built and tested without the ORM (`services.dialogue_view` builds
one from a `Dialogue`).

The template is a `string.Template` (`$name` placeholders, so the JSON example in the text
needs no escaping): `$topic`, `$side_a_stance`, `$side_b_stance`, `$dialogue`, and also
`$title` and `$story` for a template that shows the case's story (the paper's does not).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

TEMPLATE_NAME = "llm_participant"
TASK = "llm_participant"  # the offline backend's hint["task"]

# Written from Table 30; the last paragraph (the answer's form) is ours.
DEFAULT_TEMPLATE = """\
You will read one debate between two sides about a case. Each case has a true answer — that \
is, whether a specific person is responsible for a crime — and one of the two sides is arguing \
for that true answer. Your task is to judge which side is more likely arguing the true answer. \
Read the entire debate carefully before answering the evaluation questions. Your responses \
should reflect your own judgment.

Debate topic: $topic
Side A stance: $side_a_stance
Side B stance: $side_b_stance

Debate dialogue:

$dialogue

Which side is more likely arguing the true answer? Answer with one JSON object and nothing \
else: {"side": "A" or "B", "confidence": how confident you are that this side argues the \
true answer, an integer from 0 to 100, "reasoning": "a few sentences explaining your choice"}"""

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "side": {"type": "string", "enum": ["A", "B"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 100},
        "reasoning": {"type": "string"},
    },
    "required": ["side", "confidence", "reasoning"],
}


@dataclass(frozen=True)
class DialogueView:
    """What the prompt shows of a dialogue and what a result records about it."""

    slug: str
    case: str
    title: str
    story: str
    suspect_a: str  # whom side A argues is responsible
    suspect_b: str
    turns: list[tuple[str, str]]  # (speaker "A"/"B", text), in order
    condition: str  # baseline, anchoring, …
    variant: str
    active_side: str  # none, culprit, rival
    side_a: str  # culprit or rival
    culprit_side: str  # "A" or "B"
    active_side_letter: str  # "A", "B" or "" (baseline)

    def words(self, side: str) -> int:
        return sum(len(text.split()) for speaker, text in self.turns if speaker == side)


def transcript(view: DialogueView) -> str:
    """The turns as Table 30 shows them: "Round/Turn n — Side X:" then the text."""
    return "\n\n".join(
        f"Round/Turn {n} — Side {speaker}:\n{text.strip()}" for n, (speaker, text) in enumerate(view.turns, 1)
    )


def topic(view: DialogueView) -> str:
    return f"Who is responsible in “{view.title}”: {view.suspect_a} or {view.suspect_b}?"


def render(template_text: str, view: DialogueView) -> str:
    """The prompt for `view` from a template's text (unknown `$names` are left as written)."""
    return string.Template(template_text).safe_substitute(
        topic=topic(view),
        side_a_stance=f"{view.suspect_a} is responsible.",
        side_b_stance=f"{view.suspect_b} is responsible.",
        dialogue=transcript(view),
        title=view.title,
        story=view.story.strip(),
    )


def offline_hint(view: DialogueView, judge: JudgeModel) -> dict:
    """What the offline backend needs to answer (never sent to a model)."""
    return {"task": TASK, "judge": judge.label, "words": {"A": view.words("A"), "B": view.words("B")}}


def result_of(answer: dict, view: DialogueView, judge: JudgeModel) -> dict:
    """An item's result: the answer (validated against ANSWER_SCHEMA) with what scoring and
    the Table 31 rows need of the dialogue."""
    side = answer["side"]
    return {
        "side": side,
        "confidence": int(round(float(answer["confidence"]))),
        "reasoning": str(answer["reasoning"]),
        "culprit_side": view.culprit_side,
        "correct": side == view.culprit_side,
        "condition": view.condition,
        "variant": view.variant,
        "active_side": view.active_side,
        "active_side_letter": view.active_side_letter,
        "side_a": view.side_a,
        "dialogue": view.slug,
        "case": view.case,
        "judge": judge.label,
        "model": judge.model,
    }


# --- Judge models ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeModel:
    """One LLM participant: a short label (the Table 31 column), the model, its temperature,
    and its prices in USD per million tokens (`Calls` reads price_in_per_mtok/_out_)."""

    label: str
    model: str
    temperature: float = 0.0
    price_in_per_mtok: Decimal = field(default=Decimal(0))
    price_out_per_mtok: Decimal = field(default=Decimal(0))

    def as_config(self) -> dict:
        return {
            "label": self.label,
            "model": self.model,
            "temperature": self.temperature,
            "price_in": str(self.price_in_per_mtok),
            "price_out": str(self.price_out_per_mtok),
        }

    @classmethod
    def from_config(cls, data: dict) -> JudgeModel:
        return cls(
            label=str(data["label"]),
            model=str(data["model"]),
            temperature=float(data.get("temperature", 0.0)),
            price_in_per_mtok=Decimal(str(data.get("price_in", 0) or 0)),
            price_out_per_mtok=Decimal(str(data.get("price_out", 0) or 0)),
        )


def parse_models(text: str) -> list[JudgeModel]:
    """Judge models from lines "label | model | temperature | price_in | price_out" (the last
    three optional: 0, 0, 0; blank lines and lines starting with # are skipped). ValueError
    naming the line when one is malformed or a label repeats."""
    models: list[JudgeModel] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 2 or len(parts) > 5 or not parts[0] or not parts[1]:
            raise ValueError(f"line {number}: write “label | model | temperature | price_in | price_out”")
        if not all(c.isalnum() or c in "-_." for c in parts[0]):
            raise ValueError(f"line {number}: a label is letters, digits, '-', '_' or '.' ({parts[0]!r})")
        parts += [""] * (5 - len(parts))
        try:
            temperature = float(parts[2] or 0)
            price_in, price_out = Decimal(parts[3] or 0), Decimal(parts[4] or 0)
        except (ValueError, InvalidOperation):
            raise ValueError(f"line {number}: temperature and prices are numbers") from None
        if not 0 <= temperature <= 2 or price_in < 0 or price_out < 0:
            raise ValueError(f"line {number}: temperature is 0-2 and prices are not negative")
        if any(m.label == parts[0] for m in models):
            raise ValueError(f"line {number}: the label {parts[0]!r} is used twice")
        models.append(JudgeModel(parts[0], parts[1], temperature, price_in, price_out))
    return models


def format_models(models: list[JudgeModel]) -> str:
    """The lines `parse_models` reads."""
    return "\n".join(
        f"{m.label} | {m.model} | {m.temperature:g} | {m.price_in_per_mtok} | {m.price_out_per_mtok}"
        for m in models
    )
