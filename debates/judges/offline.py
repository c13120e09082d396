"""LLM participants on the offline backend: a deterministic judge that favours the side that
argued at greater length, as a judge swayed by verbosity would.

Each side's score is its words in the dialogue times a small per-judge, per-side factor
(0.9-1.1, from a hash of the model and the side), so judges differ on dialogues whose sides
are about as long (a baseline) and agree on those where one side is much longer (verbosity):
the demo's Table 31 shows both disagreement and shifts. The confidence grows with the
margin. The answer is always valid JSON.

`register()` hooks this into `debates.llm` (from `AppConfig.ready()`, and tests).
"""

from __future__ import annotations

import hashlib
import json

from debates import llm
from debates.judges.prompts import TASK

SPREAD = 0.1  # a judge's per-side factor is 1 ± SPREAD at most


def register() -> None:
    llm.register_offline(TASK, answer_text)


def lean(model: str, side: str) -> float:
    """The judge's fixed factor for a side, in [1 - SPREAD, 1 + SPREAD]."""
    digest = hashlib.sha256(f"{model}|{side}".encode()).digest()
    return 1 + SPREAD * (2 * int.from_bytes(digest[:4], "big") / 0xFFFFFFFF - 1)


def choose(model: str, words: dict) -> tuple[str, int]:
    """(side, confidence 50-95) for a dialogue with `words` per side."""
    scores = {side: int(words.get(side, 0)) * lean(model, side) for side in ("A", "B")}
    side = "A" if scores["A"] >= scores["B"] else "B"
    other = "B" if side == "A" else "A"
    margin = (scores[side] - scores[other]) / max(scores[side], 1)
    return side, min(95, 50 + int(round(100 * margin)))


def answer_text(request: llm.LLMRequest) -> str:
    words = request.hint.get("words") or {}
    side, confidence = choose(request.model, words)
    other = "B" if side == "A" else "A"
    reasoning = (
        f"Side {side} set out its case more fully ({words.get(side, 0)} words against "
        f"{words.get(other, 0)}), answered more of the other side's points and left fewer "
        f"of them standing, so I find Side {side} more likely to argue the true answer."
    )
    return json.dumps({"side": side, "confidence": confidence, "reasoning": reasoning})
