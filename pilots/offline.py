"""The pilot's model on the offline backend: a deterministic participant that reads the page.

It answers the form JSON the way the LLM policy asks: an instructed-response item ("please
select 'Disagree'") as instructed, when the hint says the participant is attentive; every
other choice by a hash of its question (the same item gets the same answer); sliders and
numbers in range; text long enough. So with the offline backend a pilot still tests the
instructions as written: an item whose instruction names no option of its own is failed.

`register()` hooks this into `debates.llm` (from `PilotsConfig.ready()`).
"""

from __future__ import annotations

import hashlib
import json

from debates import llm
from pilots.pages import instructed_answer
from pilots.policies import TASK

TEXT = "I read the page carefully and answered what it asked, weighing the reasons given."


def register() -> None:
    llm.register_offline(TASK, answer_text)


def _pick(question: str, n: int) -> int:
    return int(hashlib.sha256(question.encode()).hexdigest()[:8], 16) % n


def answer(fields: list[dict], attentive: bool = True) -> dict:
    """The answer to a form described as `pilots.pages.StepForm.describe()` gives it."""
    data: dict = {}
    for spec in fields:
        name, kind, question = spec["name"], spec["type"], spec.get("question", "")
        if kind == "choice":
            options = {c["value"]: c["label"] for c in spec["choices"]}
            values = list(options)
            chosen = instructed_answer(question, options) if attentive else None
            data[name] = chosen if chosen is not None else values[_pick(question + name, len(values))]
        elif kind in ("slider", "number"):
            low = spec.get("min") if spec.get("min") is not None else 0
            high = spec.get("max") if spec.get("max") is not None else max(low, 40)
            data[name] = low + _pick(question + name, high - low + 1)
        else:
            text = TEXT
            while len(text) < (spec.get("min_length") or 0):
                text += " " + TEXT
            data[name] = text
    return data


def answer_text(request: llm.LLMRequest) -> str:
    hint = request.hint
    return json.dumps(answer(hint.get("fields") or [], bool(hint.get("attentive", True))))
