"""Content plans (paper 000, Table 15): what each of the six turns of a dialogue must say,
built from the case and the reasons chosen for its two suspects, with the active side's
intervention written into its turns.

A plan is data; `prompts.rollout_messages` turns one turn's plan into the rollout prompt.
Pure: no Django, no model calls.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from debates.generation import specs


@dataclass(frozen=True)
class CaseView:
    """A case as the pipeline sees it."""

    slug: str
    title: str
    story: str
    suspects: list[str]
    culprit: str
    rival: str
    evidence: dict[int, str]  # number -> text

    def suspect(self, role: str) -> str:
        return self.culprit if role == "culprit" else self.rival


@dataclass(frozen=True)
class Setup:
    """One dialogue to build: the case, who side A accuses, the condition, its fallacy."""

    case: CaseView
    side_a_role: str  # "culprit" or "rival"
    condition: specs.Condition
    fallacy: str = ""  # the fallacy sub-type when the bias is fallacy oversight
    words_per_turn: int = 170
    turns: int = specs.TURNS

    def accused(self, letter: str) -> str:
        role = self.side_a_role if letter == "A" else other_role(self.side_a_role)
        return self.case.suspect(role)

    def role(self, letter: str) -> str:
        return self.side_a_role if letter == "A" else other_role(self.side_a_role)

    @property
    def active_role(self) -> str:
        """Dialogue.active_side: "none", "culprit" or "rival"."""
        return self.role(self.condition.active_letter) if self.condition.active_letter else "none"


@dataclass
class TurnPlan:
    number: int
    speaker: str
    phase: str
    accused: str  # whom this speaker argues is responsible
    opponent_accused: str
    instructions: list[str]
    evidence: list[int]  # the evidence units this turn must cover
    bias: str = ""  # the intervention this turn carries ("" for none)
    words: int = 170
    notes: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def other_role(role: str) -> str:
    return "rival" if role == "culprit" else "culprit"


def plan(setup: Setup, reasons: dict[str, dict]) -> list[TurnPlan]:
    """The six turns' plans. `reasons` maps "culprit" and "rival" to their reason records
    (see prompts.REASONS_SCHEMA: incriminating and exculpatory, each primary and additional)."""
    return [_turn(setup, reasons, number) for number in range(1, setup.turns + 1)]


def _turn(setup: Setup, reasons: dict[str, dict], number: int) -> TurnPlan:
    letter = specs.speaker_of(number)
    mine, theirs = reasons[setup.role(letter)], reasons[other_role(setup.role(letter))]
    phase = specs.phase(number, setup.turns)
    condition = setup.condition
    active = condition.active_letter == letter
    spec = specs.bias_spec(condition.bias, setup.fallacy) if active else None
    bias = spec.key if spec and number in spec.turns(setup.turns) else ""
    words = setup.words_per_turn
    accused, other = setup.accused(letter), setup.accused("B" if letter == "A" else "A")
    lines, evidence = _PHASES[phase](mine, theirs, accused, other)
    notes: dict = {}
    if active and condition.bias == "verbosity":
        extra, more = _verbose(phase, mine, theirs, accused, other)
        lines += extra
        evidence += [n for n in more if n not in evidence]
        words = int(words * 1.6)
        notes = {"verbose": True}
    if active and condition.bias == "anchoring":
        lines = _anchored(phase, lines, mine, accused)
    if bias and condition.bias in ("pro_jargon", "fallacy_oversight"):
        lines.append(f"Use {spec.label.lower()} as described below, without naming it.")
    return TurnPlan(number, letter, phase, accused, other, lines, evidence, bias, words, notes)


def _reason(record: dict, side: str, which: str) -> dict:
    return record[side][which]


def _opening(mine, theirs, accused, other) -> tuple[list[str], list[int]]:
    guilt = _reason(mine, "incriminating", "primary")
    doubt = _reason(theirs, "exculpatory", "primary")
    return (
        [
            "Retell the story briefly, covering every listed evidence unit; use the story only "
            "as grounding and add only non-decisive background needed for flow.",
            f"Sentence 1 of the argument: the conclusion that {accused} is responsible, in natural words.",
            f"Then the incriminating facts against {accused}: {_cite(guilt)}.",
            f"Then what they show: {guilt['interpretations'][0]} {guilt['interpretations'][1]}",
            f"Then why suspicion of {other} is weaker: {doubt['interpretations'][0]}",
        ],
        _units(guilt, doubt),
    )


def _rebuttal(mine, theirs, accused, other) -> tuple[list[str], list[int]]:
    doubt = _reason(theirs, "exculpatory", "primary")
    defence = _reason(mine, "exculpatory", "primary")
    guilt = _reason(mine, "incriminating", "primary")
    return (
        [
            f"Answer the opponent's case against {other} directly: {_cite(doubt)} — "
            f"{doubt['interpretations'][1]}",
            f"Anticipate the defence of {accused} ({_cite(defence)}) and explain why it does not "
            f"remove the incriminating facts {_cite(guilt)}.",
            "Quote or paraphrase the opponent's last turn where you answer it.",
        ],
        _units(doubt, guilt),
    )


def _summary(mine, theirs, accused, other) -> tuple[list[str], list[int]]:
    guilt = _reason(mine, "incriminating", "primary")
    return (
        [
            "Weigh the whole debate: say which facts matter most and why, and answer the "
            "opponent's strongest remaining point.",
            f"Close with the conclusion that {accused}, not {other}, is responsible, resting on "
            f"{_cite(guilt)}.",
        ],
        _units(guilt),
    )


_PHASES = {"opening": _opening, "rebuttal": _rebuttal, "summary": _summary}


def _verbose(phase, mine, theirs, accused, other) -> tuple[list[str], list[int]]:
    """The verbosity intervention: a second complete reason, its facts and its explanation."""
    if phase == "rebuttal":
        extra = _reason(theirs, "exculpatory", "additional")
        line = f"Add a second, separate reason why {other} is unlikely to be responsible"
    else:
        extra = _reason(mine, "incriminating", "additional")
        line = f"Add a second, separate reason against {accused}"
    return (
        [
            f"{line}: {_cite(extra)}. Explain how these facts support your conclusion: "
            f"{extra['interpretations'][0]} {extra['interpretations'][1]}"
        ],
        _units(extra),
    )


def _anchored(phase, lines, mine, accused) -> list[str]:
    """The anchoring intervention (Table 15's replacements): the opening's first sentence
    foregrounds one interpretation as the starting point; later turns weigh everything
    against it and return to it."""
    anchor = _reason(mine, "incriminating", "primary")["interpretations"][0]
    if phase == "opening":
        lines[1] = (
            "Sentence 1 of the argument: a neutral starting-point cue that puts this "
            f"interpretation first — {anchor} — followed by the conclusion that {accused} is "
            "responsible."
        )
        return lines
    return [
        *lines,
        f"Treat the opening point ({anchor}) as the reference point: weigh each of the "
        "opponent's facts by whether it displaces that point, answer it, and return to the same "
        "point in your conclusion.",
    ]


def _cite(reason: dict) -> str:
    return ", ".join(f"[E{n}]" for n in reason["evidence"])


def _units(*reasons: dict) -> list[int]:
    seen: list[int] = []
    for reason in reasons:
        seen += [n for n in reason["evidence"] if n not in seen]
    return seen
