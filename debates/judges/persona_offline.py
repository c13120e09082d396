"""Persona and naive judges on the offline backend: deterministic, plausible answers.

Each answer draws u in [0, 1) from a hash of the model, the session, the judge kind and the
stage, so the same request always gets the same answer and judges differ from each other:
- a persona judge answers as its human did with probability 0.75 (initial) or 0.7 (final),
  else it answers the truth: it emulates its person, and it is a little more accurate;
- a naive judge answers the truth with probability 0.6 before the conversation; after it,
  it takes the side whose AI wrote more words with probability 0.5 (a debate's longer
  side, a consultant's own side), else the truth with probability 0.7.
The confidence is 55-90, higher after the conversation. The answer is always valid JSON.

`register()` hooks this into `debates.llm` (from `AppConfig.ready()`, and tests).
"""

from __future__ import annotations

import hashlib
import json

from debates import llm
from debates.judges.persona_prompts import PERSONA, TASK


def register() -> None:
    llm.register_offline(TASK, answer_text)


def draw(*parts) -> float:
    """A number in [0, 1) fixed by `parts`."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def choose(model: str, hint: dict) -> tuple[bool, int]:
    """(answer, confidence) for the request's hint (see the module docstring)."""
    stage, kind = hint.get("stage", "initial"), hint.get("kind", "naive")
    truth = bool(hint.get("truth"))
    human = hint.get("human") or {}
    u = draw(model, hint.get("session"), kind, stage)
    v = draw(model, hint.get("session"), kind, stage, "confidence")
    own = human.get(f"{stage}_answer")
    if kind == PERSONA and own is not None:
        answer = bool(own) if u < (0.75 if stage == "initial" else 0.7) else truth
    elif stage == "initial":
        answer = truth if u < 0.6 else not truth
    else:
        words = hint.get("words") or {}
        longer = words.get("true", 0) >= words.get("false", 0)
        answer = longer if u < 0.5 else (truth if draw(model, hint.get("session"), "t") < 0.7 else not truth)
    confidence = 55 + int(v * (25 if stage == "initial" else 35))
    return answer, confidence


def answer_text(request: llm.LLMRequest) -> str:
    answer, confidence = choose(request.model, request.hint)
    data = {"answer": "true" if answer else "false", "confidence": confidence}
    if request.hint.get("stage") == "final":
        data["justification"] = (
            f"Weighing the arguments and the sources they cited, I find the case that the claim is "
            f"{data['answer']} more convincing; the other side's points did not hold up as well."
        )
    return json.dumps(data)
