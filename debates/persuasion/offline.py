"""Design C on the offline backend: deterministic answers to its three tasks, without a model.

- "persuasion_classify": each sentence by cue words ("why" -> why; "I concede/agree/accept" ->
  concede; "I withdraw/retract" -> retract; "because/since" -> since, when a why is open; a
  question mark -> question; else claim), replying to the open move it shares most words with
  (else the latest that admits it); a concession naming the opponent's initial claim concedes
  that claim. Valid JSON, always.
- "persuasion_update": redundancy only for the same words; an initial claim is conceded or
  retracted when the sentence contains it.
- "persuasion_agent": a scripted debater that answers a why with its reasons, asks why about its
  opponent's latest point, and adds a claim of its own, in varied sentences the classifier above
  reads as meant; once it has played `concede_after` turns (None: never) it concedes the
  opponent's initial claim instead.

`register()` hooks these into `debates.llm` (from `AppConfig.ready()`, and tests).
"""

from __future__ import annotations

import json
import random
import re

from debates import llm
from debates.persuasion.protocol import normalise

TASKS = ("persuasion_classify", "persuasion_update", "persuasion_agent")


def register() -> None:
    """Answer design C's tasks on the offline backend (idempotent)."""
    llm.register_offline("persuasion_classify", classify_text)
    llm.register_offline("persuasion_update", update_text)
    llm.register_offline("persuasion_agent", agent_text)


# --- Classification --------------------------------------------------------------------------

_WHY = re.compile(r"\bwhy\b", re.I)
_CONCEDE = re.compile(r"\bi (?:now |fully |readily )?(?:concede|agree|accept)\b", re.I)
_RETRACT = re.compile(r"\bi (?:now )?(?:withdraw|retract)\b", re.I)
_REASON = re.compile(r"\b(?:because|since)\b", re.I)


def cue(sentence: str) -> str:
    """The move kind the cue words of `sentence` point to."""
    if _WHY.search(sentence):
        return "why"
    if _CONCEDE.search(sentence):
        return "concede"
    if _RETRACT.search(sentence):
        return "retract"
    if _REASON.search(sentence):
        return "since"
    if "?" in sentence:
        return "question"
    return "claim"


def classify_text(request: llm.LLMRequest) -> str:
    hint = request.hint
    targets = hint.get("targets") or []
    opponent = hint.get("opponent_claim") or {}
    entries = [_classify(sentence, targets, opponent) for sentence in hint.get("sentences") or []]
    return json.dumps({"sentences": entries})


def _classify(sentence: str, targets: list[dict], opponent: dict) -> dict:
    kind = cue(sentence)
    if kind == "since" and not _open(targets, "since"):
        kind = "claim"  # reasons are a since only in answer to a why
    entry = {"sentence": sentence, "move": kind, "target": None, "proposition": sentence, "premises": []}
    if kind == "concede" and normalise(opponent.get("text", "")) in normalise(sentence):
        return {**entry, "target": opponent.get("n"), "proposition": opponent.get("text", sentence)}
    candidates = _open(targets, kind)
    if not candidates:
        return entry
    target, point = max(
        ((t, p) for t in candidates for p in t["points"]),
        key=lambda tp: (_shared(tp[1], sentence), tp[0]["n"]),
    )
    if kind == "claim":
        return {**entry, "target": target["n"]}
    if kind == "since":
        reason = _REASON.split(sentence, maxsplit=1)[-1].strip(" ,.;") or sentence
        return {**entry, "target": target["n"], "proposition": target["points"][0], "premises": [reason]}
    if target["kind"] == "why" or target["kind"] == "question":
        point = target["points"][0]
    return {**entry, "target": target["n"], "proposition": point}


def _open(targets: list[dict], kind: str) -> list[dict]:
    return [t for t in targets if kind in t.get("replies", ())]


def _shared(a: str, b: str) -> int:
    words = set(re.findall(r"[a-z0-9]{4,}", a.casefold()))
    return len(words & set(re.findall(r"[a-z0-9]{4,}", b.casefold())))


# --- Commitment updates ----------------------------------------------------------------------


def update_text(request: llm.LLMRequest) -> str:
    hint = request.hint
    check = hint.get("check")
    if check == "redundancy":
        store = [normalise(p) for p in hint.get("store") or []]
        duplicates = [
            {"candidate": n, "commitment": store.index(normalise(c)) + 1}
            for n, c in enumerate(hint.get("candidates") or [], 1)
            if normalise(c) in store
        ]
        return json.dumps({"duplicates": duplicates})
    contains = normalise(hint.get("claim", "")) in normalise(hint.get("sentence", ""))
    return json.dumps({check or "concede": bool(hint.get("claim")) and contains})


# --- The scripted agent ----------------------------------------------------------------------

REASONS = (
    "the figures from the last decade point the same way",
    "every comparable case we know of turned out like this",
    "the people most affected say so themselves",
    "the alternative was tried and it failed",
    "the costs fall on those who never chose to bear them",
    "the research on this has been remarkably consistent",
    "the practical experience of those who work on it bears it out",
    "nothing in the record suggests otherwise",
)
CHALLENGES = (
    "Why should anyone accept that {point}?",
    "Why do you think that {point}?",
    "Why would it follow that {point}?",
)
CLAIMS = (
    "My position stands: {claim}.",
    "The record supports my view that {claim}.",
    "Looked at closely, it remains true that {claim}.",
    "The stronger case is still that {claim}.",
)
COUNTERS = (
    "That is not so, and the evidence shows it.",
    "The facts tell a different story.",
    "That overlooks what actually happens in practice.",
)


def agent_text(request: llm.LLMRequest) -> str:
    hint = request.hint
    opponent = hint.get("opponent_claim") or {}
    turns = int(hint.get("own_turns") or 0)
    concede_after = hint.get("concede_after")
    if concede_after is not None and turns >= int(concede_after) and opponent.get("text"):
        return f"I concede that {_clause(opponent['text'])}: you have persuaded me."
    pick = random.Random(f"{hint.get('speaker')}:{turns}:{hint.get('topic', '')}")  # noqa: S311 (not security)
    targets = hint.get("targets") or []
    sentences: list[str] = []
    whys = [t for t in targets if t["kind"] == "why" and "since" in t["replies"]]
    if whys:
        sentences.append(f"{_sentence(whys[-1]['points'][0])}, because {pick.choice(REASONS)}.")
    challengeable = [t for t in targets if "why" in t["replies"] and t["points"]]
    if challengeable:
        point = pick.choice(challengeable[-1]["points"])
        sentences.append(pick.choice(CHALLENGES).format(point=_clause(point)))
    claims = [t for t in targets if t["kind"] == "claim" and "claim" in t["replies"]]
    own = (hint.get("own_claim") or {}).get("text", "")
    if claims and pick.random() < 0.5:
        sentences.append(pick.choice(COUNTERS))
    elif own:
        sentences.append(pick.choice(CLAIMS).format(claim=_clause(own)))
    return " ".join(sentences[: int(hint.get("max_sentences") or 5)]) or "My position stands."


def _clause(text: str) -> str:
    text = text.strip().rstrip(".!?;: ")
    if len(text) > 1 and text[0].isupper() and text[1].islower() and not text.startswith("I "):
        return text[0].lower() + text[1:]
    return text


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".!?;: ")
    return text[:1].upper() + text[1:]
