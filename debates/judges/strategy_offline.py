"""Strategy raters on the offline backend: deterministic, plausible ratings.

Each strategy has a base prevalence (the paper found evidence-based strategies common and
emotional ones rare: `BASE`, unknown labels 0.3); a debater arguing the false side leans a
little more on critical thinking and fallacies, as Table 3 reports. The level is the base
plus a draw from a hash of (session, debater, label) shared by every rater (what the debater
did) plus a smaller one of the rater's own, so raters mostly but not always agree.

`register()` hooks this into `debates.llm` (from `AppConfig.ready()`, and tests).
"""

from __future__ import annotations

import hashlib
import json

from debates import llm
from debates.judges.strategy_prompts import LEVELS, TASK

BASE = {
    "conflicting evidence": 0.75,
    "critical thinking": 0.55,
    "alternative explanation": 0.45,
    "inconsistencies/fallacies": 0.35,
    "build rapport": 0.08,
    "encourage empathy": 0.05,
    "psychological needs": 0.05,
    "stories": 0.05,
}
INCORRECT_LEAN = {"critical thinking": 0.1, "inconsistencies/fallacies": 0.08}


def register() -> None:
    llm.register_offline(TASK, answer_text)


def draw(*parts) -> float:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def level(hint: dict, rater: str, label: str) -> str:
    key = label.lower()
    base = BASE.get(key, 0.3) + (0 if hint.get("correct") else INCORRECT_LEAN.get(key, 0))
    shared = draw(hint.get("session"), hint.get("debater"), key) - 0.5
    own = draw(rater, hint.get("session"), hint.get("debater"), key) - 0.5
    value = base + 0.5 * shared + 0.2 * own  # about 0-1
    if value < 0.3:
        return LEVELS[0]
    return LEVELS[min(3, 1 + int((value - 0.3) / 0.25))]


def answer_text(request: llm.LLMRequest) -> str:
    hint = request.hint
    return json.dumps({label: level(hint, request.model, label) for label in hint.get("labels") or []})
