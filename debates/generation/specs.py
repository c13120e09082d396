"""What the design-A library is made of (paper 000): the 17 conditions of a case (Table 2),
the bias interventions and the sub-types of fallacy oversight (Tables 16-23), and the
turns of the six-turn protocol.

Pure data and small functions: no Django, no model calls (an import contract says so).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

BASELINE = "baseline"
BIASES = ["anchoring", "fallacy_oversight", "pro_jargon", "verbosity"]  # Dialogue.Condition values
FALLACIES = ["hasty_generalization", "straw_man", "false_dilemma", "post_hoc", "genetic_fallacy"]
VARIANTS = ["V1", "V2"]
TURNS = 6  # the paper's protocol; a job may ask for another even number (4 to 12)


@dataclass(frozen=True)
class Bias:
    key: str
    label: str
    definition: str
    metric: str  # what a reader (and the manifestation check) looks for
    contrast: str  # how the active side differs from a baseline speaker
    first_turn: int = 1  # it shows from this turn of the protocol to the last

    def turns(self, total: int) -> list[int]:
        return list(range(self.first_turn, total + 1))


# Condensed from the bias specifications of paper 000 (Tables 16-23).
SPECS: dict[str, Bias] = {
    "anchoring": Bias(
        "anchoring",
        "Anchoring",
        "Uses a fact already stated in the opening as a fixed reference frame and organises the "
        "later rebuttal and summary around it, while still answering the opponent.",
        "From turn 3 on the speaker makes one opening fact or interpretation the judge's reference "
        "point: later evidence is weighed by whether it displaces that anchor, and the conclusion "
        "returns to it. Not in the openings (turns 1-2); not mere repetition or a refusal to engage.",
        "A baseline speaker weighs each later fact on its own terms and may shift its central "
        "reason; the anchoring speaker keeps returning to one opening reason as the yardstick.",
        first_turn=3,
    ),
    "pro_jargon": Bias(
        "pro_jargon",
        "Pro-jargon",
        "Uses specialised, legalistic, forensic or professional-sounding terminology to make the "
        "argument seem more credible, rigorous or authoritative.",
        "Ordinary evidence is recurrently framed through formal labels or technical-sounding "
        "concepts that imply rigour; the jargon does persuasive work rather than naming facts.",
        "A baseline speaker states the same evidence in ordinary language and explains a "
        "specialised term when one is needed; this speaker re-encodes ordinary facts as "
        "technical constructs that add no evidence or reasoning.",
    ),
    "verbosity": Bias(
        "verbosity",
        "Verbosity",
        "Uses substantially more words and supporting detail than needed to make the same "
        "argument, creating an impression of completeness and support.",
        "The speaker's argument is noticeably longer than the other side's, adding a second "
        "supporting reason, its facts and an explanation, without changing the conclusion.",
        "A baseline speaker uses only the primary reason and the minimum explanation; this "
        "speaker adds a second relevant reason, more facts and more reasoning (not merely "
        "fancier words).",
    ),
    "fallacy_oversight": Bias(
        "fallacy_oversight",
        "Fallacy oversight",
        "Commits a logical fallacy that a careless judge may overlook.",
        "The speaker's rebuttal or summary rests on the named fallacy.",
        "A baseline speaker reasons validly from the same facts.",
        first_turn=3,
    ),
}

FALLACY_SPECS: dict[str, Bias] = {
    "hasty_generalization": Bias(
        "hasty_generalization",
        "Hasty generalisation",
        "Draws a broad conclusion from limited, selective or unrepresentative evidence.",
        "A small sample of facts, incidents or statements is presented as revealing a general "
        "pattern, trait or rule, which is then applied to the case.",
        "A baseline speaker links the limited facts to the conclusion through an inference about "
        "this event only.",
        first_turn=3,
    ),
    "straw_man": Bias(
        "straw_man",
        "Straw man",
        "Misrepresents the opponent's position in a weaker or more extreme form and attacks that "
        "version instead of the real argument.",
        "The opponent's claim is restated in a simplified, exaggerated or less defensible form "
        "(plausibly related, not invented) and the distortion is refuted as if it were the claim.",
        "A baseline speaker answers the opponent's actual claim at its stated scope.",
        first_turn=3,
    ),
    "false_dilemma": Bias(
        "false_dilemma",
        "False dilemma",
        "Presents the case as if only two choices exist when other explanations are available.",
        "The dispute is framed as a stark choice between two options, leaving out middle ground "
        "and alternatives, and rejecting one option is treated as proof of the other.",
        "A baseline speaker lets the evidence support several explanations and compares them.",
        first_turn=3,
    ),
    "post_hoc": Bias(
        "post_hoc",
        "Post hoc ergo propter hoc",
        "Treats one event as the cause of another mainly because it happened earlier.",
        "Sequence and timing carry the causal claim: because B followed A, A explains B, while "
        "alternative causes are played down.",
        "A baseline speaker uses timing as one fact and asks for a mechanism or corroboration.",
        first_turn=3,
    ),
    "genetic_fallacy": Bias(
        "genetic_fallacy",
        "Genetic fallacy",
        "Judges a claim or piece of evidence by its origin rather than its current merits.",
        "A claim, witness or item of evidence is accepted or rejected mainly because of its "
        "source, history or background.",
        "A baseline speaker judges evidence on its content and case-specific reliability.",
        first_turn=3,
    ),
}


@dataclass(frozen=True)
class Condition:
    """One row of a case's inventory (Table 2): `number` 1-17, the bias (or baseline), the
    side that carries it ("A", "B" or "" for baseline) and the variant."""

    number: int
    bias: str
    active_letter: str
    variant: str

    @property
    def key(self) -> str:
        return f"{self.number:02d}"

    @property
    def label(self) -> str:
        if self.bias == BASELINE:
            return "Baseline vs. Baseline"
        order = "Active vs. Baseline" if self.active_letter == "A" else "Baseline vs. Active"
        return f"{SPECS[self.bias].label}, {order}, {self.variant}"


def inventory() -> list[Condition]:
    """The 17 conditions of a case, numbered as Table 2: the baseline, then for each bias
    Active vs. Baseline V1, V2 and Baseline vs. Active V1, V2."""
    rows = [Condition(1, BASELINE, "", "")]
    for bias in BIASES:
        for letter in ("A", "B"):
            for variant in VARIANTS:
                rows.append(Condition(len(rows) + 1, bias, letter, variant))
    return rows


def condition_numbered(number: int) -> Condition:
    return inventory()[number - 1]


def phase(number: int, total: int) -> str:
    """Openings are the first two turns, summaries the last two, rebuttals between (the
    paper's six: 1-2, 3-4, 5-6)."""
    if number <= 2:
        return "opening"
    return "summary" if number > total - 2 else "rebuttal"


def speaker_of(turn: int) -> str:
    """Side A speaks the odd turns, side B the even ones."""
    return "A" if turn % 2 else "B"


def side_a_role(case_slug: str, rule: str, seed: int) -> str:
    """Whom side A argues for in every dialogue of a case: "culprit", "rival", or, with
    "balanced", a fixed draw per case from the seed (about half the cases each way)."""
    if rule in ("culprit", "rival"):
        return rule
    return "culprit" if zlib.crc32(f"{seed}|{case_slug}".encode()) % 2 == 0 else "rival"


def fallacies_for(case_slug: str, allowed: list[str], seed: int) -> dict[str, str]:
    """The fallacy sub-type of each variant of a case: two different ones (when two are
    allowed), drawn from the seed so every run of the same job gets the same."""
    allowed = [f for f in FALLACIES if f in allowed] or list(FALLACIES)
    start = zlib.crc32(f"{seed}|{case_slug}|fallacy".encode()) % len(allowed)
    return {variant: allowed[(start + n) % len(allowed)] for n, variant in enumerate(VARIANTS)}


def item_seed(base: int, key: str, attempt: int) -> int:
    """The seed of one attempt at one item: a regenerated dialogue gets a new seed."""
    return (base * 1_000_003 + zlib.crc32(key.encode()) + 7919 * attempt) % 2**31


def bias_spec(bias: str, fallacy: str = "") -> Bias | None:
    """The specification an active side follows: the fallacy's own for fallacy oversight."""
    if bias == BASELINE:
        return None
    if bias == "fallacy_oversight" and fallacy:
        return FALLACY_SPECS[fallacy]
    return SPECS[bias]  # fallacy oversight without a known sub-type: any fallacy


def bias_spec_by_key(key: str) -> Bias | None:
    """A bias's or a fallacy's specification by its key."""
    return SPECS.get(key) or FALLACY_SPECS.get(key)
