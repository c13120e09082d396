"""The prompts of design C's language side, and the JSON schemas of the answers they ask for.

Written for Rostrum from the descriptions in appendix B of the design's paper:
- classification (B.1): a system prompt defining the six moves and the labelling rules, and a
  user prompt embedding the previous two turns with XML-style tags (`<claim n="4">…</claim>`),
  the moves open to a reply, and the sentences of the current turn, all labelled in one answer;
- commitment updates (B.2): a fixed system role (the commitment store's keeper) and one user
  prompt per question: redundancy against a store, concession of the opponent's initial claim,
  retraction of one's own;
- the base agent (B.3): the configuration's template, then the dialogue's rules, both stores,
  the history and the replies open now; the user message is the opponent's last turn.

Everything here is text and data: no model calls (`language` makes them).
"""

from __future__ import annotations

import string
from typing import TYPE_CHECKING, Any

from debates.persuasion.protocol import Game, Kind, Move, other

if TYPE_CHECKING:
    from debates.persuasion.language import AgentView, TopicView

KINDS = [kind.value for kind in Kind]
NAMES = {"pro": "PRO", "con": "CON"}
Admissible = list[tuple[int, list[Kind]]]  # what Game.admissible returns
RECENT_TURNS = 2  # turns embedded in a classification prompt (App. C.2: the previous two)
OPEN_MOVES_SHOWN = 12  # the latest open moves listed to the classifier and the agent
HISTORY_MOVES_SHOWN = 80  # the agent's history: the latest moves

# --- Classification (App. B.1) ---------------------------------------------------------------

REPLY_RULES = """\
Which move may reply to which (a reply always answers a move of the other speaker):
- to a claim p: why p, a counter-claim, concede p, or question p;
- to a why p: p since reasons, a claim giving a reason, or retract p;
- to p since reasons: why q, concede q, or question q, for one of the reasons q;
- to a question p: a claim (p or its contrary), or retract p;
- nothing replies to a concede or a retract: they close their line."""

CLASSIFY_SYSTEM = f"""\
You are an expert annotator of persuasion dialogues in the formal framework of Prakken (2006).
Two speakers, PRO and CON, argue about a topic, each defending an initial claim. Every sentence a
speaker writes is exactly one dialogue move. Label each sentence of the current turn with one of
these six move types:
- claim: the sentence asserts a proposition.
- since: the sentence asserts a proposition together with the reasons supporting it, in answer to a
  challenge (a why) by the other speaker.
- why: the sentence challenges a proposition and asks for its justification.
- question: the sentence asks for the other speaker's opinion on, or for information about, a
  proposition, without demanding a justification.
- concede: the sentence explicitly agrees with, or accepts, a proposition of the other speaker.
- retract: the sentence explicitly withdraws a proposition the speaker put forward earlier.

Rules:
1. Give exactly one label per sentence; the labels exclude each other.
2. An attack on the other speaker's proposition (a denial, a counter-example) is a claim.
3. A sentence giving reasons is since only if the other speaker has challenged that proposition
   with a why in the previous turns; otherwise it is a claim.
4. Use the previous turns to tell since from claim.
5. A challenge demanding a justification is why.
6. A sentence containing the word "why" is why; any other interrogative sentence is question.
7. question is only for neutral requests for information or opinion.
8. Explicit agreement is concede.
9. Explicit withdrawal of one's own earlier statement is retract.

{REPLY_RULES}

For each sentence also give:
- "target": the number n of the other speaker's move the sentence replies to, chosen among the
  moves listed in <open-moves>; null if it replies to none of them.
- "proposition": the proposition of the move as a short, self-contained declarative sentence: for
  claim, what is asserted; for since, the conclusion the reasons support (the proposition that was
  challenged); for why, question, concede and retract, the proposition challenged, asked about,
  accepted or withdrawn (copy it from the move replied to when it is the same).
- "premises": for since, the reasons given, each a short declarative sentence; otherwise [].

Answer with JSON only (no other text, no code fence), one entry per sentence, in order:
{{"sentences": [{{"sentence": "<the sentence>", "move": "claim", "target": 3, "proposition": "<p>", \
"premises": []}}]}}
"move" is one of: {", ".join(KINDS)}."""


def classify_schema(count: int) -> dict:
    """The schema of a classification answer for `count` sentences."""
    entry = {
        "type": "object",
        "required": ["sentence", "move", "target", "proposition", "premises"],
        "properties": {
            "sentence": {"type": "string"},
            "move": {"enum": KINDS},
            "target": {"type": ["integer", "null"]},
            "proposition": {"type": "string"},
            "premises": {"type": "array", "items": {"type": "string"}},
        },
    }
    return {
        "type": "object",
        "required": ["sentences"],
        "properties": {"sentences": {"type": "array", "items": entry, "minItems": count, "maxItems": count}},
    }


def classify_messages(
    game: Game, speaker: str, sentences: list[str], topic: TopicView, found: Admissible | None = None
) -> list[dict]:
    """System and user message classifying the sentences of `speaker`'s turn now (`found`:
    `game.admissible(speaker)` when the caller has it already)."""
    lines = [
        header(topic),
        "<previous-turns>",
        *recent_turns(game),
        "</previous-turns>",
        f"<open-moves> (the moves of {NAMES[other(speaker)]} that {NAMES[speaker]} may reply to now)",
        *open_moves(game, speaker, found),
        "</open-moves>",
        f"Current turn, by {NAMES[speaker]} ({len(sentences)} sentences):",
        *(f'<sentence i="{i}">{text}</sentence>' for i, text in enumerate(sentences, 1)),
        "Classify each sentence of the current turn.",
    ]
    return [{"role": "system", "content": CLASSIFY_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def header(topic: TopicView) -> str:
    return (
        f"Topic: {topic.text}\nPRO's initial claim: {topic.pro_claim}\nCON's initial claim: {topic.con_claim}"
    )


def tag(game: Game, index: int, *, allowed: list[Kind] | None = None) -> str:
    """One move as an XML-style element: `<since n="5" speaker="pro" replies-to="4">…</since>`."""
    move = game.moves[index]
    attributes = f'n="{index}" speaker="{move.speaker}"'
    if move.target is not None:
        attributes += f' replies-to="{move.target}"'
    if index < 2:
        attributes += ' initial-claim="true"'
    if allowed is not None:
        attributes += f' may-reply="{", ".join(allowed)}"'
    body = move.proposition
    if move.kind == Kind.SINCE:
        body += "".join(f"<premise>{p}</premise>" for p in move.premises)
    return f"<{move.kind} {attributes}>{body}</{move.kind}>"


def recent_turns(game: Game) -> list[str]:
    """The previous two turns (after the initial claims while fewer were played), oldest first."""
    turns = game.turns[-RECENT_TURNS:]
    lines: list[str] = []
    if len(turns) < RECENT_TURNS:
        for index in (0, 1):
            lines += [
                f'<turn speaker="{game.moves[index].speaker}" initial="true">',
                tag(game, index),
                "</turn>",
            ]
    last = other(game.to_move)  # turns alternate: the side not to move played the last one
    for back, indices in zip(range(len(turns) - 1, -1, -1), turns, strict=True):
        lines.append(f'<turn speaker="{last if back % 2 == 0 else other(last)}">')
        lines += [tag(game, i) for i in indices] or ["(no move)"]
        lines.append("</turn>")
    return lines


def open_moves(game: Game, speaker: str, found: Admissible | None = None) -> list[str]:
    """The other side's moves `speaker` may reply to now, the latest OPEN_MOVES_SHOWN, with kinds."""
    found = (game.admissible(speaker) if found is None else found)[-OPEN_MOVES_SHOWN:]
    return [tag(game, index, allowed=kinds) for index, kinds in found] or ["(none)"]


# --- Commitment updates (App. B.2) -----------------------------------------------------------

UPDATE_SYSTEM = """\
You keep the commitment stores of a formal persuasion dialogue (Prakken 2006) between PRO and CON.
A speaker's commitment store is the list of propositions that speaker has publicly committed to.
You answer one question about the dialogue's commitments. Judge meaning, not wording: the same
statement in other words counts as the same; a statement merely on the same subject does not.
Answer with JSON only (no other text, no code fence), in the form the question asks for."""

REDUNDANCY_SCHEMA = {
    "type": "object",
    "required": ["duplicates"],
    "properties": {
        "duplicates": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["candidate", "commitment"],
                "properties": {
                    "candidate": {"type": "integer", "minimum": 1},
                    "commitment": {"type": "integer", "minimum": 1},
                },
            },
        }
    },
}
CONCEDE_SCHEMA = {"type": "object", "required": ["concede"], "properties": {"concede": {"type": "boolean"}}}
RETRACT_SCHEMA = {"type": "object", "required": ["retract"], "properties": {"retract": {"type": "boolean"}}}


def redundancy_messages(speaker: str, store: list[str], candidates: list[str]) -> list[dict]:
    """Which candidates are already in (or semantically the same as) an entry of the store."""
    lines = [
        f"The commitments of {NAMES[speaker]}:",
        *(f"{i}. {p}" for i, p in enumerate(store, 1)),
        f"Propositions {NAMES[speaker]} now asserts (candidates):",
        *(f"{i}. {p}" for i, p in enumerate(candidates, 1)),
        "For each candidate: is it already in, or semantically the same as, one of the commitments?",
        'Answer {"duplicates": [{"candidate": <number>, "commitment": <number>}, ...]}, listing only the '
        'candidates that are, each with the commitment it repeats; {"duplicates": []} if none is.',
    ]
    return _update(lines)


def concede_messages(speaker: str, claim: str, sentence: str, turn_text: str) -> list[dict]:
    """Whether `sentence` of `speaker` concedes the opponent's initial claim `claim`."""
    opponent = NAMES[other(speaker)]
    lines = [
        f"{opponent}'s initial claim: {claim}",
        f"{NAMES[speaker]}'s whole turn: {turn_text}",
        f"The sentence to judge: {sentence}",
        f"Does this sentence concede {opponent}'s initial claim, that is, accept that claim itself as true "
        "(not merely a smaller point, and not ironically)?",
        'Answer {"concede": true} or {"concede": false}.',
    ]
    return _update(lines)


def retract_messages(speaker: str, claim: str, sentence: str, turn_text: str) -> list[dict]:
    """Whether `sentence` of `speaker` withdraws the speaker's own initial claim `claim`."""
    name = NAMES[speaker]
    lines = [
        f"{name}'s initial claim: {claim}",
        f"{name}'s whole turn: {turn_text}",
        f"The sentence to judge: {sentence}",
        f"Does this sentence retract {name}'s initial claim, that is, give that claim itself up (not some "
        "other statement)?",
        'Answer {"retract": true} or {"retract": false}.',
    ]
    return _update(lines)


def _update(lines: list[str]) -> list[dict]:
    return [{"role": "system", "content": UPDATE_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


RETRY = "Your answer could not be used: {problem}. Answer again, with the JSON only."

# --- The base agent (App. B.3) ---------------------------------------------------------------

DEFAULT_AGENT_TEMPLATE = """\
You are taking part in a formal persuasion dialogue (Prakken 2006) about this topic: {topic}
You argue {stance}. Your initial claim: "{own_claim}". Your opponent's initial claim: "{other_claim}".
{persona}"""

STANCES = {"pro": "for the topic", "con": "against the topic"}

AGENT_RULES = """\
This dialogue is hypothetical: it is part of a research study with ethics approval, and arguing a
side here is an exercise, not an endorsement.
A persuasion dialogue resolves a conflict of opinions about a proposition: it ends when both
sides hold the same standpoint. Your goal is to persuade your opponent to adopt yours by coherent
argument. You win if your opponent concedes your initial claim or retracts their own; you lose if
you concede theirs or retract yours, so concede only what you are truly persuaded of.
Every sentence you write is one move:
- claim: assert a proposition ("Public transport cuts congestion.");
- since: give your reasons for a proposition your opponent challenged ("It cuts congestion, because
  one bus replaces forty cars.");
- why: challenge a proposition of your opponent and ask for their reasons ("Why do you think that
  buses cut congestion?");
- question: ask your opponent's view on a proposition ("Do you think buses run often enough?");
- concede: accept a proposition of your opponent ("I concede that buses are slower.");
- retract: withdraw a proposition of your own ("I withdraw my claim that buses are cheaper.").
As a rule of thumb, reasons (since) persuade more than bare claims, claims more than questions.
{rules}"""

AGENT_FORMAT = """\
Write {min_sentences} to {max_sentences} sentences of plain text, replying only as the rules above
allow. No JSON, no lists, no headings, no move labels, no move numbers: just what you say to your
opponent. Stay consistent with your commitments."""


def agent_messages(
    game: Game, speaker: str, agent: AgentView, topic: TopicView, found: Admissible | None = None
) -> list[dict]:
    """System and user message of `speaker`'s base agent (App. B.3) for the turn now."""
    values = {
        "topic": topic.text,
        "stance": STANCES[speaker],
        "own_claim": game.initial_claims[speaker],
        "other_claim": game.initial_claims[other(speaker)],
        "persona": agent.persona or "",
        "min_sentences": 1,
        "max_sentences": game.max_sentences,
    }
    parts = [fill(agent.prompt_template or DEFAULT_AGENT_TEMPLATE, values).strip()]
    if topic.background:
        parts.append(f"Background on the topic: {topic.background}")
    parts.append(AGENT_RULES.format(rules=REPLY_RULES))
    parts.append(stores_text(game, speaker))
    parts.append("The dialogue so far (numbered moves):\n" + "\n".join(history(game, speaker)))
    parts.append(
        "The moves of your opponent you may reply to now:\n" + "\n".join(openings(game, speaker, found))
    )
    parts.append(AGENT_FORMAT.format(**values))
    return [
        {"role": "system", "content": "\n\n".join(parts)},
        {"role": "user", "content": last_word(game, speaker)},
    ]


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill(template: str, values: dict[str, Any]) -> str:
    """The template with its placeholders filled; unknown ones left as they are, and a template
    that does not parse (a stray brace) used as written rather than failing the turn."""
    try:
        return string.Formatter().vformat(template, (), _Missing(values))
    except (ValueError, IndexError, AttributeError, KeyError):
        return template


def stores_text(game: Game, speaker: str) -> str:
    mine = "\n".join(f"- {p}" for p in game.stores[speaker]) or "- (none)"
    theirs = "\n".join(f"- {p}" for p in game.stores[other(speaker)]) or "- (none)"
    return f"Your commitments:\n{mine}\n\nYour opponent's commitments:\n{theirs}"


def said(move: Move) -> str:
    """A move in plain words, as the agent reads it in the history."""
    point = clause(move.proposition)
    if move.kind == Kind.CLAIM:
        return move.proposition
    if move.kind == Kind.SINCE:
        return f"{sentence_case(point)}, because {'; '.join(clause(p) for p in move.premises)}."
    if move.kind == Kind.WHY:
        return f"Why do you hold that {point}?"
    if move.kind == Kind.QUESTION:
        return f"What is your view on whether {point}?"
    if move.kind == Kind.CONCEDE:
        return f"I concede that {point}."
    return f"I withdraw that {point}."


def history(game: Game, speaker: str) -> list[str]:
    start = max(0, len(game.moves) - HISTORY_MOVES_SHOWN)
    lines = []
    for index in range(start, len(game.moves)):
        move = game.moves[index]
        who = "You" if move.speaker == speaker else "Opponent"
        reply = f" (reply to {move.target})" if move.target is not None and index > 1 else ""
        initial = " (initial claim)" if index < 2 else ""
        lines.append(f"[{index}] {who}, {move.kind}{initial}{reply}: {said(move)}")
    return lines


def openings(game: Game, speaker: str, found: Admissible | None = None) -> list[str]:
    found = (game.admissible(speaker) if found is None else found)[-OPEN_MOVES_SHOWN:]
    return [
        f"[{i}] {said(game.moves[i])} -> you may reply with: {', '.join(kinds)}" for i, kinds in found
    ] or ["(none)"]


def last_word(game: Game, speaker: str) -> str:
    """The user message: the opponent's last turn (or initial claim), and the instruction."""
    opponent_turn = game.turns[-1] if game.turns else []
    if not game.turns:
        said_last = f"Your opponent's initial claim: {game.initial_claims[other(speaker)]}"
    elif not opponent_turn:
        said_last = "Your opponent made no move in their last turn."
    else:
        said_last = "Your opponent's last turn: " + " ".join(said(game.moves[i]) for i in opponent_turn)
    return (
        f"{said_last}\n\nReply persuasively, as the system message describes, in 1 to {game.max_sentences} "
        "sentences of plain text."
    )


def clause(text: str) -> str:
    """A proposition to embed in a sentence: end punctuation dropped, a capital lowered when it
    only starts the sentence ("The tax…" -> "the tax…", but "I…", "UK…" stay)."""
    text = text.strip().rstrip(".!?;: ")
    if len(text) > 1 and text[0].isupper() and text[1].islower() and not text.startswith("I "):
        return text[0].lower() + text[1:]
    return text


def sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]
