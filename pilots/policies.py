"""How simulated participants answer: `ScriptedPolicy` (plausible, seeded and fast) and
`LLMPolicy` (a model reads each page's visible text and the form's fields and answers JSON).

The scripted participant is attentive with a seeded probability; an attentive one reads
instructed-response items ("please select 'Disagree'") and does what they say, and answers
everything else plausibly at random. It knows nothing the page does not show (no database):
so a check only the study's data could answer is passed by chance, as by a guesser.

The LLM policy sends the page as a person sees it (`pilots.pages`) through `debates.llm`
(the model `--model` names); the answer must be a JSON object of the fields' values that
fits the form (validated against a JSON schema built from the form); an invalid answer is
asked again once with the problem, then the scripted answer is used and recorded as a
fallback. Every call is kept in the policy's `calls` for the pilot's summary. How a request
reaches the model is the policy's `complete`: straight through `debates.llm` (recorded by
`record`) for `manage.py pilot`, or through a job item's budgeted, logged calls for the
"pilot" job kind (`pilots.jobs`).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from debates import llm
from pilots.pages import StepForm, instructed_answers

if TYPE_CHECKING:
    from pilots.walker import SimulatedParticipant

TASK = "pilot_page"  # the offline backend's hint task (pilots.offline)
Complete = Callable[[llm.LLMRequest], llm.LLMResult]  # a request to the model, its answer
FILLER = [
    "I compared the reasons each side gave and how well they fit the facts described.",
    "The stronger side explained the timeline and answered the objections more directly.",
    "I went with the explanation that needed fewer assumptions and cited concrete details.",
]
QUESTIONS = [
    "What is your strongest piece of evidence?",
    "How reliable is the source you cited?",
    "What would change your mind?",
]
ARGUMENTS = [
    "Why do you think that?",
    "I hold my view because the evidence from other countries supports it.",
    "What would change your mind?",
]


class ScriptedPolicy:
    """Plausible answers, fast: seeded choices, instructed-response items read from the text."""

    name = "scripted"

    def answers(self, form: StepForm, person: SimulatedParticipant) -> dict[str, str]:
        rng, chosen = person.rng, {}
        for name, options in form.radios.items():
            chosen[name] = rng.choice(options)
        for name, (low, high) in form.ranges.items():
            chosen[name] = str(rng.randint(low, high))
            chosen[f"{name}__touched"] = "1"
        for name, (low, high) in form.numbers.items():
            chosen[name] = str(rng.randint(max(low or 18, 18), min(high or 70, 70)))
        for name, minimum in form.texts.items():
            text = rng.choice(FILLER)
            while len(text) < minimum:
                text += " " + rng.choice(FILLER)
            chosen[name] = text
        if form.kind == "consent":
            chosen["consent"] = "yes"
        if person.attentive:
            chosen.update(instructed_answers(form))
        return chosen

    def question(self, state: dict, person: SimulatedParticipant) -> dict:
        rng = person.rng
        if rng.random() < 0.5:
            return {"type": "ask", "target": "pass", "text": ""}
        targets = list(state.get("sides", {})) or ["C"]
        target = rng.choice(targets + (["both"] if len(targets) == 2 else []))
        return {"type": "ask", "target": target, "text": rng.choice(QUESTIONS)}

    def argument(self, snapshot: dict, person: SimulatedParticipant) -> str:
        rng = person.rng
        other = "con" if snapshot["side"] == "pro" else "pro"
        if snapshot["turns_played"] >= 6 and rng.random() < 0.25:
            claim = snapshot["claims"][other].rstrip(".")
            return f"I concede that {claim[:1].lower()}{claim[1:]}."
        return rng.choice([*ARGUMENTS, f"{snapshot['claims'][snapshot['side']]} I have good reasons for it."])


# --- The model as a participant ------------------------------------------------------------

SYSTEM = (
    "You are a participant in an online research study. You see one page of the study at a "
    "time, as text, and the form's fields. Read the page carefully and answer as an attentive, "
    "honest participant would, following every instruction on the page. Answer with one JSON "
    "object only: each field's name mapped to the value you give (for a choice, the value of "
    "the option; for a slider or a number, an integer in range; for text, your words)."
)


def answer_schema(form: StepForm) -> dict:
    """A JSON schema of a valid answer to the form: every field required, with its range."""
    properties: dict[str, dict] = {}
    for name, values in form.radios.items():
        properties[name] = {"type": "string", "enum": list(values)}
    for name, (low, high) in form.ranges.items():
        properties[name] = {
            "type": ["integer", "string"],
            "pattern": r"^-?\d+$",
            "minimum": low,
            "maximum": high,
        }
    for name, (low, high) in form.numbers.items():
        number: dict = {"type": ["integer", "string"], "pattern": r"^-?\d+$"}
        if low is not None:
            number["minimum"] = low
        if high is not None:
            number["maximum"] = high
        properties[name] = number
    for name, minimum in form.texts.items():
        properties[name] = {"type": "string", "minLength": max(minimum, 1)}
    return {"type": "object", "properties": properties, "required": sorted(properties)}


def page_prompt(form: StepForm) -> str:
    return (
        f"The page ({form.progress or 'a step'}), titled {form.title!r}:\n\n{form.text}\n\n"
        f"The form's fields:\n{json.dumps(form.describe(), indent=1, ensure_ascii=False)}\n\n"
        "Answer with the JSON object of the field values."
    )


parse_answer = llm.json_answer  # the one reader of JSON answers


class LLMPolicy(ScriptedPolicy):
    """A model answers each page; the conversations of designs B and C stay scripted."""

    name = "llm"

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.0,
        max_tokens: int = 600,
        record=None,
        complete: Complete | None = None,
    ) -> None:
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.record = record  # called with (request, result, error) for the call log, or None
        self.complete = complete or self._direct  # the model's answer (raises llm.LLMError)
        self.calls: list[dict] = []
        self.lock = threading.Lock()

    def answers(self, form: StepForm, person: SimulatedParticipant) -> dict[str, str]:
        scripted = super().answers(form, person)
        if not form.field_names:
            return scripted  # nothing to answer: a page to read, or buttons only (consent)
        schema = answer_schema(form)
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": page_prompt(form)}]
        problems = []
        for _ in range(2):  # asked again once, with what was wrong
            text = self._complete(messages, form, person)
            if text is None:
                problems.append("the model call failed")
                break
            data, problem = parse_answer(text, schema)
            if data is not None:
                self._note(person, form, "answered", "")
                return {**scripted, **{k: str(v) for k, v in data.items() if k in form.field_names}}
            problems.append(problem)
            messages += [
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": f"That answer {problem}. Answer again with the JSON object only.",
                },
            ]
        self._note(person, form, "fallback", "; ".join(problems))
        return scripted

    def _complete(self, messages: list[dict], form: StepForm, person: SimulatedParticipant) -> str | None:
        request = llm.LLMRequest(
            model=self.model,
            messages=messages,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=person.rng.randrange(2**31),
            hint={"task": TASK, "page": form.text, "fields": form.describe(), "attentive": person.attentive},
        )
        try:
            return self.complete(request).text
        except llm.LLMError:
            return None  # recorded by `complete`; the scripted answer is used

    def _direct(self, request: llm.LLMRequest) -> llm.LLMResult:
        """Straight through `debates.llm` (in this thread), recorded by `record`."""
        try:
            result = asyncio.run(llm.complete(request))
        except llm.LLMError as error:
            if self.record:
                self.record(request, None, error)
            raise
        if self.record:
            self.record(request, result, None)
        return result

    def _note(self, person: SimulatedParticipant, form: StepForm, what: str, problem: str) -> None:
        note = {"pid": person.pid, "position": form.position, "title": form.title, "kind": form.kind}
        note.update(result=what, problem=problem)
        person.outcome.notes.append(note)
        with self.lock:
            self.calls.append(note)


def policy_named(
    name: str,
    *,
    model: str = "",
    record=None,
    complete: Complete | None = None,
    temperature: float = 0.0,
    max_tokens: int = 600,
) -> ScriptedPolicy:
    if name == "scripted":
        return ScriptedPolicy()
    if name == "llm":
        if not model:
            raise ValueError("the llm policy needs a model (--model)")
        return LLMPolicy(
            model, temperature=temperature, max_tokens=max_tokens, record=record, complete=complete
        )
    raise ValueError(f"unknown policy {name!r}: use scripted or llm")


def seeded(seed: int, n: int) -> list[random.Random]:
    """The participants' generators: the same seed gives the same temperaments and answers."""
    root = random.Random(seed)
    return [random.Random(root.getrandbits(64)) for _ in range(n)]


def seeded_one(seed: int, n: int) -> random.Random:
    """The `n`-th (1, 2, …) participant's generator of `seeded(seed, …)`: a job item's."""
    return seeded(seed, n)[n - 1]
