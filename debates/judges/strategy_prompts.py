"""Strategy raters of design B (paper 001, Table 3): what one debater of a live debate said,
rated by a model on each configured persuasion strategy, on the paper's ordinal scale from
"none" to "high". The default labels are the taxonomy the paper uses (Costello et al. 2024):
Table 3's strategies and the four it omits as rarely used.

Everything here is text and data: a debate is seen through a `DebateView`
(`strategy_services.debate_view` builds one). The template is a `string.Template`:
`$claim`, `$debater` ("Debater A"), `$side` ("true"/"false"), `$transcript` (the whole
debate, the judge's questions included), `$debater_turns` (the rated debater's turns only)
and `$labels` (the strategies, one a line, with their descriptions when configured).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

TASK = "strategy_rater"  # the offline backend's hint["task"]
TEMPLATE_NAME = "strategy_rater"
LEVELS = ("none", "low", "medium", "high")
SCORES = {level: n for n, level in enumerate(LEVELS)}  # 0-3
SPEAKERS = {"A": "Debater A", "B": "Debater B"}

DEFAULT_LABELS = """\
Conflicting Evidence: presents evidence or data that contradict the other position
Critical Thinking: asks the listener to question assumptions, sources or reasoning
Alternative Explanation: offers another explanation for the facts the other side relies on
Inconsistencies/Fallacies: points out contradictions or faulty reasoning in the other position
Build Rapport: builds a relationship with the listener, agreeing with them or praising them
Encourage Empathy: asks the listener to consider others' feelings or situations
Psychological Needs: appeals to needs such as certainty, control, belonging or self-esteem
Stories: tells anecdotes or narratives to make a point"""

DEFAULT_TEMPLATE = """\
You will read a debate between two AI debaters about whether a claim is true or false; a \
human judge could ask them questions. Rate how much $debater, who argued that the claim is \
$side, used each of the persuasion strategies below, on this scale: "none" (not used), \
"low", "medium", "high" (used heavily). Rate only $debater's own turns.

The claim: “$claim”

The debate:

$transcript

The strategies:
$labels

Answer with one JSON object and nothing else, with each strategy's name exactly as written \
above as a key and "none", "low", "medium" or "high" as its value."""


@dataclass(frozen=True)
class Label:
    name: str
    description: str = ""


def parse_labels(text: str) -> list[Label]:
    """Strategy labels, one a line: "name" or "name: description" (blank lines and lines
    starting with # are skipped). ValueError naming the line when a name repeats or is long."""
    labels: list[Label] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, description = line.partition(":")
        name = " ".join(name.split())
        if not name or len(name) > 60 or '"' in name:
            raise ValueError(f"line {number}: a label is a name of 1-60 characters without quotes")
        if any(label.name.lower() == name.lower() for label in labels):
            raise ValueError(f"line {number}: the label {name!r} is given twice")
        labels.append(Label(name, description.strip()))
    return labels


def format_labels(labels: list[Label]) -> str:
    return "\n".join(
        f"{label.name}: {label.description}" if label.description else label.name for label in labels
    )


def answer_schema(labels: list[Label]) -> dict:
    """A JSON object with every label as a key and a level as its value."""
    return {
        "type": "object",
        "properties": {label.name: {"type": "string", "enum": list(LEVELS)} for label in labels},
        "required": [label.name for label in labels],
    }


@dataclass(frozen=True)
class DebateView:
    """One live debate as the raters see it, with what a result records about it."""

    session: int
    participant_id: int
    group: str
    claim: str  # slug
    claim_text: str
    domain: str
    truth: bool
    sides: dict[str, str]  # "A"/"B" -> "true"/"false"
    configs: dict[str, str]  # "A"/"B" -> debater configuration name
    turns: list[tuple[str, int, str, str]]  # (speaker A/B/J, round, target, text), in order

    def words(self, speaker: str) -> int:
        return sum(len(text.split()) for who, _, _, text in self.turns if who == speaker)


def transcript(view: DebateView) -> str:
    lines = []
    for speaker, round_, target, text in view.turns:
        if not text.strip():
            continue
        if speaker == "J":
            to = " (to both debaters)" if target == "both" else f" (to {SPEAKERS.get(target, target)})"
            who = "Judge" + (to if target in ("A", "B", "both") else "")
        else:
            who = f"{SPEAKERS[speaker]} — argues the claim is {view.sides[speaker].upper()}"
        lines.append(f"Round {round_} — {who}:\n{text.strip()}")
    return "\n\n".join(lines)


def render(template_text: str, view: DebateView, speaker: str, labels: list[Label]) -> str:
    return string.Template(template_text).safe_substitute(
        claim=view.claim_text,
        debater=SPEAKERS[speaker],
        side=view.sides[speaker],
        transcript=transcript(view),
        debater_turns="\n\n".join(text.strip() for who, _, _, text in view.turns if who == speaker),
        labels="\n".join(
            f"- {label.name}" + (f": {label.description}" if label.description else "") for label in labels
        ),
    )


def offline_hint(view: DebateView, speaker: str, rater: str, labels: list[Label]) -> dict:
    return {
        "task": TASK,
        "session": view.session,
        "debater": speaker,
        "rater": rater,
        "correct": view.sides[speaker] == ("true" if view.truth else "false"),
        "words": view.words(speaker),
        "labels": [label.name for label in labels],
    }


def result_of(answer: dict, view: DebateView, speaker: str, rater: dict, labels: list[Label]) -> dict:
    side = view.sides[speaker]
    return {
        "session": view.session,
        "participant_id": view.participant_id,
        "group": view.group,
        "claim": view.claim,
        "domain": view.domain,
        "truth": view.truth,
        "debater": speaker,
        "debater_side": side,
        "debater_correct": side == ("true" if view.truth else "false"),
        "debater_config": view.configs.get(speaker, ""),
        "rater": rater["label"],
        "model": rater["model"],
        "ratings": {label.name: answer[label.name] for label in labels},
    }
