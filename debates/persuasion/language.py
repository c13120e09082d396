"""Design C's language side: from a turn's text to protocol moves, and the base agent's request.

- `split_sentences`: the sentences of a turn (abbreviations, decimals and initialisms do not end
  one; closing quotes stay with their sentence).
- `read_turn`: one classification call for all the sentences of a turn (App. B.1, conditioned on
  the previous two turns), then only the update checks needed (App. B.2): redundancy of new
  propositions that look like entries of the speaker's store, and, for each concede or retract,
  whether it gives up an initial claim. The checks run together. Every answer is JSON validated
  against a schema; an unusable answer is asked for once more, then a safe default is used and
  the sentence is marked `fallback` (a failed call, after `llm`'s own retries, likewise). The
  moves are then fitted to the protocol (the target and the point replied to) and checked one
  after another against the game as the earlier sentences of the turn leave it.
- `agent_request` and `fallback_move`: the base agent (App. B.3) and the safe turn used when it
  fails.

Every model call goes through `debates.llm` and comes back in `Reading.calls` for the caller to
record; an answer that arrived but could not be used is a call with both a result and an error
(kind "invalid_answer").
"""

from __future__ import annotations

import asyncio
import re
import sys
from dataclasses import dataclass, field

from django.utils.translation import gettext_noop

from debates import llm
from debates.persuasion import prompts
from debates.persuasion.protocol import Game, IllegalMove, Kind, Move, normalise, other

CLASSIFY_SEED = 123  # App. C.3: temperature 0, seed 123
CHECK_TOKENS = 60
INVALID = "invalid_answer"
ON_POINT = (Kind.WHY, Kind.CONCEDE, Kind.QUESTION, Kind.RETRACT)  # the target fixes the proposition
NOTHING_OPEN = {  # a concession or retraction with nothing to apply to
    Kind.CONCEDE: gettext_noop("There is nothing open here for you to concede."),
    Kind.RETRACT: gettext_noop("There is nothing open here for you to retract."),
}
UNREADABLE = gettext_noop("This sentence could not be read as a move.")


@dataclass(frozen=True)
class TopicView:
    text: str
    pro_claim: str
    con_claim: str
    background: str = ""


@dataclass(frozen=True)
class AgentView:
    name: str
    model: str
    persona: str = ""
    temperature: float = 0.7
    max_tokens: int = 300
    seed: int | None = None
    prompt_template: str = ""
    template_version: int = 1
    offline_concede_after: int | None = None  # offline backend: concede after this many own turns


@dataclass
class SentenceReading:
    """One sentence as read: its move (kind None: none), whether the protocol accepts it now and
    why not, and whether a safe default stood in for an unusable answer."""

    text: str
    kind: Kind | None
    target: int | None
    proposition: str
    premises: tuple[str, ...]
    legal: bool
    reason: str
    fallback: bool

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "kind": None if self.kind is None else self.kind.value,
            "target": self.target,
            "proposition": self.proposition,
            "premises": list(self.premises),
            "legal": self.legal,
            "reason": self.reason,
            "fallback": self.fallback,
        }


@dataclass
class Call:
    """One attempt at a model call: `result` when an answer arrived, `error` when it failed or
    could not be used (then both are set)."""

    role: str
    request: llm.LLMRequest
    result: llm.LLMResult | None
    error: llm.LLMError | None


@dataclass
class Reading:
    sentences: list[SentenceReading] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)  # the legal ones, in order, for Game.play
    calls: list[Call] = field(default_factory=list)

    @property
    def fallback(self) -> bool:
        return any(s.fallback for s in self.sentences)


# --- Sentences -------------------------------------------------------------------------------

TITLES = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "st",
    "sr",
    "jr",
    "gen",
    "col",
    "capt",
    "lt",
    "sgt",
    "rev",
    "hon",
    "mt",
}
ALWAYS = {"e.g", "i.e", "eg", "ie", "cf", "vs", "viz", "approx", "ca", "incl", "esp", "resp", "dept", "est"}
BEFORE_NUMBER = {"no", "nos", "fig", "figs", "vol", "p", "pp", "art", "sec", "ch", "para", "ed", "op"}
SOFT = {"etc", "inc", "ltd", "co", "corp", "al", "bros", "jan", "feb", "mar", "apr", "jun", "jul", "aug"}
SOFT |= {"sep", "sept", "oct", "nov", "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun"}
STARTERS = {
    "i", "it", "its", "the", "this", "that", "these", "those", "we", "they", "he", "she", "you", "there",
    "but", "and", "so", "yet", "however", "also", "a", "an", "in", "on", "if", "my", "our", "their", "what",
    "why", "how", "do", "does", "is", "are", "can", "no", "yes", "then", "thus", "therefore", "moreover",
}  # fmt: skip
_BOUNDARY = re.compile(r"([.!?\u2026]+)([\"'\u201d\u2019\u00bb)\]]*)(\s+)")
_OPENERS = "\"'\u201c\u2018\u00ab(["
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)*[A-Za-z]")
LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022\u2013]|\d{1,2}[.)])\s+")


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, trimmed, in order; each line break ends a sentence too."""
    sentences: list[str] = []
    for line in text.splitlines():
        line = LIST_MARKER.sub("", line)
        start = 0
        for match in _BOUNDARY.finditer(line):
            before = line[start : match.start()].split()
            after = line[match.end() :].lstrip(_OPENERS)
            if _ends(match.group(1), match.group(2), before[-1] if before else "", after):
                sentences.append(line[start : match.end(2)])
                start = match.end()
        sentences.append(line[start:])
    return [s.strip() for s in sentences if any(c.isalnum() for c in s)]


def _ends(marks: str, closers: str, word: str, after: str) -> bool:
    """Whether the punctuation `marks` (then `closers`) after `word` ends a sentence before `after`."""
    if not after:
        return True
    first = after[0]
    if "?" in marks or "!" in marks:
        return not (closers and first.islower())
    if marks != ".":  # an ellipsis ends a sentence only before a capital
        return first.isupper()
    word = word.lstrip(_OPENERS)
    key = word.lower()
    next_word = re.split(r"\W", after.lower(), maxsplit=1)[0]
    if key in TITLES or key in ALWAYS:
        return False
    if key in BEFORE_NUMBER and first.isdigit():
        return False
    if key in SOFT:
        return first.isupper()
    if _INITIALISM.fullmatch(word) and (len(word) > 1 or word.isupper()):
        return first.isupper() and next_word in STARTERS  # "U.K. It rains", not "U.K. government"
    return True


# --- JSON answers ----------------------------------------------------------------------------

# Read by the one reader of JSON answers (re-exported: the tests and callers name them here).
parse_answer = llm.json_answer
schema_problem = llm.schema_problem


async def ask_json(role: str, request: llm.LLMRequest, schema: dict) -> tuple[dict | None, list[Call]]:
    """The answer to `request` as JSON fitting `schema`, asked at most twice (the second time with
    the first answer and what was wrong with it); None when there is none. Every attempt is a Call."""
    calls: list[Call] = []
    current = request
    for attempt in (1, 2):
        try:
            result = await llm.complete(current)
        except llm.LLMError as error:
            calls.append(Call(role, current, None, error))
            return None, calls
        data, problem = parse_answer(result.text, schema)
        if data is not None:
            calls.append(Call(role, current, result, None))
            return data, calls
        calls.append(Call(role, current, result, llm.LLMError(INVALID, problem, retryable=attempt == 1)))
        current = _again(request, result.text, problem)
    return None, calls


def _again(request: llm.LLMRequest, answer: str, problem: str) -> llm.LLMRequest:
    messages = [
        *request.messages,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": prompts.RETRY.format(problem=problem)},
    ]
    return llm.LLMRequest(
        model=request.model,
        messages=messages,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        seed=request.seed,
        timeout=request.timeout,
        hint={**request.hint, "retry": True},
    )


# --- Requests --------------------------------------------------------------------------------


def targets_hint(game: Game, speaker: str, found: prompts.Admissible) -> list[dict]:
    """The moves `speaker` may reply to now (`found`), as data for the offline backend, oldest first."""
    return [
        {"n": i, "kind": game.moves[i].kind.value, "points": list(_points(game, i)), "replies": list(kinds)}
        for i, kinds in found
    ]


def _claims_hint(game: Game, speaker: str) -> dict:
    opponent = other(speaker)
    return {
        "opponent_claim": {"n": _initial_index(opponent), "text": game.initial_claims[opponent]},
        "own_claim": {"n": _initial_index(speaker), "text": game.initial_claims[speaker]},
    }


def classify_request(
    game: Game, speaker: str, sentences: list[str], *, model: str, topic: TopicView
) -> llm.LLMRequest:
    found = game.admissible(speaker)
    hint = {
        "task": "persuasion_classify",
        "speaker": speaker,
        "sentences": list(sentences),
        "targets": targets_hint(game, speaker, found),
        **_claims_hint(game, speaker),
    }
    return llm.LLMRequest(
        model=model,
        messages=prompts.classify_messages(game, speaker, sentences, topic, found),
        temperature=0.0,
        max_tokens=120 + 160 * len(sentences),
        seed=CLASSIFY_SEED,
        hint=hint,
    )


def _check_request(
    model: str, messages: list[dict], hint: dict, tokens: int = CHECK_TOKENS
) -> llm.LLMRequest:
    return llm.LLMRequest(
        model=model,
        messages=messages,
        temperature=0.0,
        max_tokens=tokens,
        seed=CLASSIFY_SEED,
        hint={"task": "persuasion_update", **hint},
    )


def redundancy_request(model: str, speaker: str, store: list[str], candidates: list[str]) -> llm.LLMRequest:
    messages = prompts.redundancy_messages(speaker, store, candidates)
    hint = {"check": "redundancy", "store": list(store), "candidates": list(candidates)}
    return _check_request(model, messages, hint, tokens=40 + 20 * len(candidates))


def concede_request(model: str, speaker: str, claim: str, sentence: str, turn_text: str) -> llm.LLMRequest:
    messages = prompts.concede_messages(speaker, claim, sentence, turn_text)
    return _check_request(model, messages, {"check": "concede", "claim": claim, "sentence": sentence})


def retract_request(model: str, speaker: str, claim: str, sentence: str, turn_text: str) -> llm.LLMRequest:
    messages = prompts.retract_messages(speaker, claim, sentence, turn_text)
    return _check_request(model, messages, {"check": "retract", "claim": claim, "sentence": sentence})


def agent_request(game: Game, speaker: str, agent: AgentView, topic: TopicView) -> llm.LLMRequest:
    """The base agent's request for `speaker`'s turn now (App. B.3): plain text, 1-5 sentences."""
    found = game.admissible(speaker)
    hint = {
        "task": "persuasion_agent",
        "speaker": speaker,
        "own_turns": own_turns(game, speaker),
        "concede_after": agent.offline_concede_after,
        "targets": targets_hint(game, speaker, found),
        "max_sentences": game.max_sentences,
        "topic": topic.text,
        **_claims_hint(game, speaker),
    }
    return llm.LLMRequest(
        model=agent.model,
        messages=prompts.agent_messages(game, speaker, agent, topic, found),
        temperature=agent.temperature,
        max_tokens=agent.max_tokens,
        seed=agent.seed,
        hint=hint,
    )


def own_turns(game: Game, speaker: str) -> int:
    """How many turns `speaker` has played (turns alternate, starting with `game.first`)."""
    played = len(game.turns)
    return (played + 1) // 2 if speaker == game.first else played // 2


def fallback_move(game: Game, speaker: str) -> tuple[str, list[Move]]:
    """A safe turn when the agent could not write one: ask why (else question) about the latest
    open point of the opponent; failing that, hold one's initial claim against a challenge."""
    for index, kinds in reversed(game.admissible(speaker)):
        for kind in (Kind.WHY, Kind.QUESTION):
            if kind in kinds:
                for point in _points(game, index):
                    move = Move(speaker, kind, point, index)
                    if _legal(game, move):
                        return prompts.said(move), [move]
    own = game.initial_claims[speaker]
    for index, kinds in reversed(game.admissible(speaker)):
        if Kind.CLAIM in kinds:
            move = Move(speaker, Kind.CLAIM, own, index)
            if _legal(game, move):
                return f"I maintain that {prompts.clause(own)}.", [move]
    return "I have nothing to add for now.", []


# --- Reading a turn ----------------------------------------------------------------------------


@dataclass
class _Draft:
    """A sentence's reading before it is fitted to the protocol."""

    text: str
    kind: Kind | None
    target: int | None = None
    proposition: str = ""
    premises: tuple[str, ...] = ()
    fallback: bool = False
    initial: bool | None = None  # concede/retract: whether it gives up an initial claim (checked)


async def read_turn(game: Game, speaker: str, text: str, *, model: str, topic: TopicView) -> Reading:
    """Read `speaker`'s turn `text` as moves (see the module's docstring); does not play them."""
    sentences = split_sentences(text)[: game.max_sentences]
    if not sentences:
        return Reading()
    request = classify_request(game, speaker, sentences, model=model, topic=topic)
    answer, calls = await ask_json("classify", request, prompts.classify_schema(len(sentences)))
    if answer is None:
        drafts = [_Draft(s, None, fallback=True) for s in sentences]
    else:
        drafts = [_draft(s, entry) for s, entry in zip(sentences, answer["sentences"], strict=True)]
    rewrites, check_calls = await _checks(game, speaker, drafts, " ".join(sentences), model)
    reading = Reading(calls=calls + check_calls)
    for draft in drafts:
        _fit(game, speaker, draft, rewrites, reading)
    return reading


def _draft(sentence: str, entry: dict) -> _Draft:
    target = entry["target"]
    premises = tuple(p.strip() for p in entry["premises"] if p.strip())
    return _Draft(sentence, Kind(entry["move"]), target, entry["proposition"].strip(), premises)


async def _checks(
    game: Game, speaker: str, drafts: list[_Draft], turn_text: str, model: str
) -> tuple[dict[str, str], list[Call]]:
    """The update checks the drafts need, run together: sets `initial` on concedes and retracts,
    returns the redundancy rewrites (normalised proposition -> the store's wording) and the calls."""
    jobs = []
    for draft in drafts:
        if draft.kind in (Kind.CONCEDE, Kind.RETRACT):
            jobs.append(_initial_check(game, speaker, draft, turn_text, model))
    candidates = _may_repeat(game.stores[speaker], drafts)
    if candidates:
        jobs.append(_redundancy(game.stores[speaker], speaker, candidates, model))
    results = await asyncio.gather(*jobs)
    calls = [call for _, found in results for call in found]
    rewrites = results[-1][0] if candidates else {}
    return rewrites, calls


async def _initial_check(
    game: Game, speaker: str, draft: _Draft, turn_text: str, model: str
) -> tuple[None, list[Call]]:
    """Whether a concede (retract) gives up the opponent's (own) initial claim: sets `draft.initial`."""
    if draft.kind == Kind.CONCEDE:
        claim = game.initial_claims[other(speaker)]
        request = concede_request(model, speaker, claim, draft.text, turn_text)
        answer, calls = await ask_json("concede_check", request, prompts.CONCEDE_SCHEMA)
    else:
        claim = game.initial_claims[speaker]
        request = retract_request(model, speaker, claim, draft.text, turn_text)
        answer, calls = await ask_json("retract_check", request, prompts.RETRACT_SCHEMA)
    # Safe default: nothing that would end the dialogue.
    draft.initial = bool(answer and answer[draft.kind.value])
    draft.fallback = draft.fallback or answer is None
    return None, calls


async def _redundancy(
    store: list[str], speaker: str, candidates: list[tuple[str, _Draft]], model: str
) -> tuple[dict[str, str], list[Call]]:
    """Which candidates the store already holds in other words: {normalised candidate: its wording}."""
    texts = [text for text, _ in candidates]
    request = redundancy_request(model, speaker, store, texts)
    answer, calls = await ask_json("redundancy", request, prompts.REDUNDANCY_SCHEMA)
    if answer is None:  # safe default: nothing is a duplicate (the store keeps both wordings)
        for _, draft in candidates:
            draft.fallback = True
        return {}, calls
    rewrites = {}
    for item in answer["duplicates"]:
        candidate, commitment = item["candidate"], item["commitment"]
        if candidate <= len(texts) and commitment <= len(store):
            rewrites[normalise(texts[candidate - 1])] = store[commitment - 1]
    return rewrites, calls


def _may_repeat(store: list[str], drafts: list[_Draft]) -> list[tuple[str, _Draft]]:
    """New propositions (claims, reasons) that look like a store entry without being one verbatim."""
    found = []
    keys = {normalise(p) for p in store}
    for draft in drafts:
        if draft.kind == Kind.CLAIM:
            texts = [draft.proposition or draft.text]
        elif draft.kind == Kind.SINCE:
            texts = list(draft.premises)
        else:
            continue
        for text in texts:
            if normalise(text) not in keys and any(overlap(text, p) >= 0.5 for p in store):
                found.append((text, draft))
    return found


def _fit(game: Game, speaker: str, draft: _Draft, rewrites: dict[str, str], reading: Reading) -> None:
    """Fit the draft to the game as the turn's earlier moves leave it, check it, record it."""
    state = _state_after(game, speaker, reading.moves)
    if draft.kind is None:
        move = _fallback_claim(state, speaker, draft.text)
        if move is None:
            reading.sentences.append(SentenceReading(draft.text, None, None, "", (), False, UNREADABLE, True))
            return
    else:
        move, refusal = _move(state, speaker, draft, rewrites)
        if move is None:
            reading.sentences.append(
                SentenceReading(
                    draft.text,
                    draft.kind,
                    draft.target,
                    draft.proposition,
                    draft.premises,
                    False,
                    refusal,
                    draft.fallback,
                )
            )
            return
    try:
        state.check(move)
    except IllegalMove as error:
        legal, reason = False, error.reason
    else:
        legal, reason = True, ""
        reading.moves.append(move)
    reading.sentences.append(
        SentenceReading(
            draft.text, move.kind, move.target, move.proposition, move.premises, legal, reason, draft.fallback
        )
    )


def _fallback_claim(state: Game, speaker: str, text: str) -> Move | None:
    """The safe default of an unclassified sentence: a claim of itself replying to the latest move
    of the opponent, when that is legal."""
    latest = max((i for i, m in enumerate(state.moves) if m.speaker == other(speaker)), default=None)
    move = Move(speaker, Kind.CLAIM, text, latest)
    return move if latest is not None and _legal(state, move) else None


def _move(state: Game, speaker: str, draft: _Draft, rewrites: dict[str, str]) -> tuple[Move | None, str]:
    """The protocol move the draft stands for: its target and point fitted to the open moves
    (the model's target when it can take the move, else the likeliest open one)."""
    kind = draft.kind
    if (
        kind == Kind.SINCE
        and not _takes(state, speaker, draft.target, kind)
        and not _open_for(state, speaker, kind)
    ):
        kind = Kind.CLAIM  # rule 3: reasons are a since only in answer to a why
    if kind in ON_POINT:
        return _on_point(state, speaker, draft, kind)
    if _takes(state, speaker, draft.target, kind):
        target = draft.target
    else:
        target = _best(state, _open_for(state, speaker, kind), draft)
    if kind == Kind.CLAIM:
        proposition = draft.proposition or draft.text
        if kind != draft.kind and draft.premises:
            proposition = draft.text  # a since demoted to a claim asserts the whole sentence
        return Move(speaker, kind, rewrites.get(normalise(proposition), proposition), target), ""
    conclusion = state.moves[target].proposition
    premises = [rewrites.get(normalise(p), p) for p in draft.premises] or [draft.text]
    premises = [p for p in premises if normalise(p) != normalise(conclusion)] or [draft.text]
    return Move(speaker, kind, conclusion, target, tuple(dict.fromkeys(premises))), ""


def _on_point(state: Game, speaker: str, draft: _Draft, kind: Kind) -> tuple[Move | None, str]:
    """why, question, concede, retract: the point of an open move; for concede and retract the
    check on the initial claim decides whether that claim is the point or must not be."""
    owner = other(speaker) if kind == Kind.CONCEDE else speaker
    claim = normalise(state.initial_claims[owner]) if kind in (Kind.CONCEDE, Kind.RETRACT) else None
    if draft.initial and kind == Kind.CONCEDE:
        move = Move(speaker, kind, state.initial_claims[owner], _initial_index(owner))
        if _legal(state, move):
            return move, ""

    def options(indices: list[int]) -> list[tuple[int, str]]:
        return [
            (i, p)
            for i in indices
            for p in _points(state, i)
            if (claim is None or (normalise(p) == claim) == bool(draft.initial))
            and _legal(state, Move(speaker, kind, p, i))
        ]

    found = options([draft.target]) if _takes(state, speaker, draft.target, kind) else []
    found = found or options(_open_for(state, speaker, kind))
    if not found:
        if draft.initial and kind == Kind.CONCEDE:
            return None, gettext_noop("Your opponent's initial claim cannot be conceded here.")
        if draft.initial:
            return None, gettext_noop(
                "You can withdraw your initial claim only when your opponent asks about it."
            )
        if claim is not None:
            return None, NOTHING_OPEN[kind]
        return Move(speaker, kind, draft.proposition or draft.text, draft.target), ""
    said = f"{draft.proposition} {draft.text}"
    index, point = max(found, key=lambda o: (overlap(o[1], said), o[0]))
    return Move(speaker, kind, point, index), ""


def _takes(state: Game, speaker: str, index: object, kind: Kind) -> bool:
    """Whether moves[index] is the opponent's and can take a `kind` reply now."""
    return (
        isinstance(index, int)
        and not isinstance(index, bool)
        and 0 <= index < len(state.moves)
        and state.moves[index].speaker == other(speaker)
        and kind in state.replies(index)
    )


def _open_for(state: Game, speaker: str, kind: Kind) -> list[int]:
    return [i for i, kinds in state.admissible(speaker) if kind in kinds]


def _best(state: Game, open_for: list[int], draft: _Draft) -> int | None:
    """The open move the draft most likely replies to: most words in common, then the latest."""
    if not open_for:
        return None
    said = " ".join([draft.text, draft.proposition, *draft.premises])
    return max(open_for, key=lambda i: (overlap(" ".join(_points(state, i)), said) >= 0.5, i))


def _points(game: Game, index: int) -> tuple[str, ...]:
    move = game.moves[index]
    return move.premises if move.kind == Kind.SINCE else (move.proposition,)


def _initial_index(speaker: str) -> int:
    return 0 if speaker == "pro" else 1


def _legal(game: Game, move: Move) -> bool:
    try:
        game.check(move)
    except IllegalMove:
        return False
    return True


def _state_after(game: Game, speaker: str, moves: list[Move]) -> Game:
    """A copy of the game with `moves` played, still `speaker`'s turn: what the next sentence meets."""
    state = game.copy()
    if moves:
        state.max_turns = sys.maxsize  # the turn limit applies to whole turns, not within one
        state.play(speaker, moves)
        state.to_move = speaker
    return state


STOPWORDS = {
    "the", "and", "that", "this", "with", "for", "are", "was", "were", "not", "but", "have", "has", "had",
    "its", "it's", "they", "them", "their", "there", "what", "which", "who", "from", "into", "than", "then",
    "does", "did", "can", "will", "would", "should", "could", "you", "your", "our", "all", "any", "more",
    "most", "much", "very", "also", "because", "since", "why", "how", "one", "just", "about", "been", "being",
}  # fmt: skip


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.casefold()) if len(w) > 2 and w not in STOPWORDS}


def overlap(a: str, b: str) -> float:
    """Share of the shorter text's content words found in the other (0 when either has none)."""
    left, right = content_words(a), content_words(b)
    if not left or not right:
        return 0.0
    return len(left & right) / min(len(left), len(right))
