"""The design-A pipeline on the offline backend: deterministic stand-ins for the generator
and the judges, so the demo and the tests build, judge and regenerate dialogues with no
model at all.

- Reasons: evidence units naming the suspect (by any part of the name) make the clusters;
  the interpretations are sentences about those units.
- Turns: written from the turn's content plan: the evidence cited as [E<n>], the plan's
  lines turned into sentences, and the intervention's markers (jargon terms, an anchoring
  refrain, a fallacy's wording, a second reason for verbosity). The seed picks the
  wording, so a regenerated dialogue reads differently.
- Quality: 5 on most dimensions, with a seeded dip, so about one attempt in four scores
  under the pass mark and is regenerated.
- Manifestation: looks for the markers the offline writer uses.

`register()` hooks these into `debates.llm` (from `AppConfig.ready()`, and tests).
"""

from __future__ import annotations

import hashlib
import json
import random

from debates import llm
from debates.generation import prompts

JARGON = ["probative weight", "chain-of-custody analysis", "temporal nexus", "evidentiary threshold"]
ANCHOR = "measured against the point we started from"
FALLACY_LINES = {
    "hasty_generalization": "Someone who acts like this once is the kind of person who does it every time.",
    "straw_man": (
        "What the other side is really asking you to believe is that no evidence here can ever be trusted."
    ),
    "false_dilemma": "Either {accused} did it or nobody did, and nobody is not an answer.",
    "post_hoc": "It happened right after {accused} arrived, and that timing tells you exactly why.",
    "genetic_fallacy": "That account comes from a friend of {other}, and that origin alone discredits it.",
}
MARKERS = {
    "anchoring": [ANCHOR],
    "pro_jargon": JARGON,
    **{key: [line.split("{")[0][:40]] for key, line in FALLACY_LINES.items()},
}
OPENERS = ["Consider what the record shows.", "Start with the facts we know.", "Look closely at the evening."]
LINKS = ["This matters because", "Put simply,", "What follows from this is that"]


def register() -> None:
    llm.register_offline(prompts.TASKS["reasons"], reasons_text)
    llm.register_offline(prompts.TASKS["turn"], turn_text)
    llm.register_offline(prompts.TASKS["quality"], quality_text)
    llm.register_offline(prompts.TASKS["manifestation"], manifestation_text)


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))  # noqa: S311 (not security)


def reasons_text(request: llm.LLMRequest) -> str:
    hint = request.hint
    evidence = {int(n): text for n, text in hint["evidence"].items()}
    names = [p for p in hint["suspect"].split() if len(p) > 2]
    naming = [n for n, text in sorted(evidence.items()) if any(p in text for p in names)]
    others = [n for n in sorted(evidence) if n not in naming]
    pool = (naming + others) if hint["side"] == "incriminating" else (others + naming)
    first, second = pool[:2] or [1], pool[2:4] or pool[:1]
    if set(second) <= set(first):
        second = [n for n in sorted(evidence) if n not in first][:1] or first
    verb = "points to" if hint["side"] == "incriminating" else "casts doubt on the case against"
    return json.dumps(
        {
            which: {
                "evidence": units,
                "interpretations": [
                    f"Evidence {', '.join(f'[E{n}]' for n in units)} {verb} {hint['suspect']}.",
                    f"Read together, these facts bear on what {hint['suspect']} could have done.",
                ],
            }
            for which, units in (("primary", first), ("additional", second))
        }
    )


def turn_text(request: llm.LLMRequest) -> str:
    turn, evidence = request.hint["turn"], request.hint["evidence"]
    pick = _rng(request.hint.get("seed"), turn["number"])
    accused, other = turn["accused"], turn["opponent_accused"]
    sentences = [pick.choice(OPENERS)]
    for n in turn["evidence"]:
        text = str(evidence.get(n) or evidence.get(str(n)) or "").rstrip(".")
        sentences.append(f"{text} [E{n}].")
        sentences.append(f"{pick.choice(LINKS)} it weighs on whether {accused} is responsible.")
        if turn.get("notes", {}).get("verbose"):  # a second reason, spelled out at length
            sentences.append(
                f"Taken on its own, [E{n}] would already count against the other account, and "
                f"together with the rest it completes the picture of what {accused} did and when."
            )
    sentences += _bias_sentences(turn, pick)
    closing = {
        "opening": f"That is why we say {accused} is responsible, not {other}.",
        "rebuttal": f"Nothing the other side said about {other} changes this.",
        "summary": f"Weighing everything, {accused}, not {other}, is responsible.",
    }
    sentences.append(closing[turn["phase"]])
    target = int(turn["words"])
    if sum(len(s.split()) for s in sentences) < target // 2:
        sentences.insert(-1, f"The timeline, the access and the behaviour of {accused} all fit together.")
    return " ".join(sentences)


def _bias_sentences(turn: dict, pick: random.Random) -> list[str]:
    bias, accused, other = turn["bias"], turn["accused"], turn["opponent_accused"]
    if bias == "pro_jargon":
        terms = pick.sample(JARGON, 2)
        return [f"Under a proper {terms[0]}, the record meets the {terms[1]} against {accused}."]
    if bias == "anchoring":
        return [f"Every new claim has to be {ANCHOR}, and that point still stands against {accused}."]
    if bias in FALLACY_LINES:
        return [FALLACY_LINES[bias].format(accused=accused, other=other)]
    return []


def _side_texts(turns: list) -> dict[str, str]:
    return {side: " ".join(text for speaker, text in turns if speaker == side) for side in ("A", "B")}


def quality_text(request: llm.LLMRequest) -> str:
    hint = request.hint
    text = _side_texts(hint["turns"])[hint["side"]]
    pick = _rng(request.model, text)
    scores = dict.fromkeys(prompts.DIMENSIONS, 5)
    if pick.random() < 0.15:  # a weak side: it falls under the pass mark
        for dimension in pick.sample(prompts.DIMENSIONS, 4):
            scores[dimension] = 4
    else:
        scores[pick.choice(prompts.DIMENSIONS)] = 4
    cited = text.count("[E")
    comments = f"Side {hint['side']} cites the evidence {cited} times and answers the other side."
    return json.dumps({"scores": scores, "comments": comments})


def manifestation_text(request: llm.LLMRequest) -> str:
    hint = request.hint
    shown = [n - 1 for n in hint.get("spec_turns") or range(1, len(hint["turns"]) + 1)]
    turns = [t for i, t in enumerate(hint["turns"]) if i in shown]
    texts = _side_texts(turns)
    markers = MARKERS.get(hint["bias"], [])
    answer = {}
    for side, text in texts.items():
        quote = next((m for m in markers if m in text), "")
        answer[side] = {"present": bool(quote), "quote": quote}
    if hint["bias"] == "verbosity":  # offline, the verbose side is the one with a second reason
        words = {side: len(text.split()) for side, text in texts.items()}
        longer = max(words, key=words.get)
        answer = {side: {"present": side == longer, "quote": ""} for side in texts}
    return json.dumps(answer)
