"""What a debater or consultant is told: the system prompt from its configuration and the
conversation so far. Nothing here ever reads the study's codes or any secret."""

from __future__ import annotations

from debates.llm import LLMRequest
from debates.models import DebaterConfig, LiveSession, LiveTurn

ROLES = {"A": "Debater A", "B": "Debater B", "C": "the consultant"}
LABELS = {"A": "Debater A", "B": "Debater B", "C": "Consultant", "J": "Judge"}
PLACEHOLDERS = ("role", "claim", "stance", "opponent_note", "sources", "max_words", "rounds")


class PromptError(ValueError):
    pass


def render_system_prompt(template: str, values: dict) -> str:
    """Fill the template's {placeholders}; an unknown one is an error naming it."""

    class Strict(dict):
        def __missing__(self, key):
            raise PromptError(
                f"unknown placeholder {{{key}}}; use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
            )

    try:
        return template.format_map(Strict(values))
    except (IndexError, ValueError) as error:
        raise PromptError(
            f"the template is not valid: {error} (write a literal brace as {{{{ or }}}})"
        ) from None


def check_template(template: str) -> None:
    render_system_prompt(template, {p: "x" for p in PLACEHOLDERS})


def format_sources(sources: list[dict]) -> str:
    if not sources:
        return "(none)"
    return "\n".join(f"[{n}] {s.get('title', '')}: {s.get('excerpt', '')}" for n, s in enumerate(sources, 1))


def system_prompt(session: LiveSession, speaker: str, config: DebaterConfig) -> str:
    side = session.side_of(speaker)
    if session.protocol == LiveSession.Protocol.DEBATE:
        other = "B" if speaker == "A" else "A"
        opponent = (
            f"{ROLES[other]}, another AI, argues the opposite side. Answer its arguments and point "
            "out their weaknesses."
        )
    else:
        opponent = "No one argues the other side: you are the judge's only advisor."
    return render_system_prompt(
        config.system_prompt,
        {
            "role": ROLES[speaker],
            "claim": session.claim.text,
            "stance": side,
            "opponent_note": opponent,
            "sources": format_sources(session.claim.sources_for(side)),
            "max_words": config.max_words,
            "rounds": session.rounds,
        },
    )


def conversation(session: LiveSession, turn: LiveTurn, before: list[LiveTurn]) -> list[dict]:
    """The transcript from this speaker's point of view, then what to do now."""
    messages: list[dict] = []
    for t in before:
        if t.status != LiveTurn.Status.DONE:
            continue
        if t.speaker == turn.speaker:
            messages.append({"role": "assistant", "content": t.text})
        else:
            messages.append({"role": "user", "content": f"{LABELS[t.speaker]}{_addressed(t)}: {t.text}"})
    messages.append({"role": "user", "content": instruction(session, turn, before)})
    return _merge_users(messages)


def _addressed(turn: LiveTurn) -> str:
    if turn.speaker != "J" or turn.target in ("", "pass"):
        return ""
    return " (to both debaters)" if turn.target == "both" else f" (to {LABELS[turn.target]})"


def instruction(session: LiveSession, turn: LiveTurn, before: list[LiveTurn]) -> str:
    text = f"Round {turn.round} of {session.rounds}. "
    question = last_question(before)
    if turn.round == 1:
        text += "Give your opening argument."
    elif turn.round == session.rounds:
        text += "Give your final argument and strongest evidence."
    else:
        text += "Continue the argument."
    if question is not None:
        if question.target in (turn.speaker, "both") or session.protocol == LiveSession.Protocol.CONSULTANCY:
            text += f" First answer the judge's question: \u201c{question.text}\u201d"
        elif question.target not in ("", "pass"):
            text += " The judge's question was for the other debater; you may respond to it briefly."
    return text


def last_question(before: list[LiveTurn]) -> LiveTurn | None:
    judge = [t for t in before if t.speaker == "J"]
    if judge and judge[-1].target != "pass" and judge[-1].text:
        return judge[-1]
    return None


def _merge_users(messages: list[dict]) -> list[dict]:
    merged: list[dict] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"] == "user":
            merged[-1] = {"role": "user", "content": merged[-1]["content"] + "\n\n" + m["content"]}
        else:
            merged.append(dict(m))
    return merged


def turn_request(session: LiveSession, turn: LiveTurn, before: list[LiveTurn]) -> LLMRequest:
    config = session.config_for(turn.speaker)
    side = session.side_of(turn.speaker)
    question = last_question(before)
    opponents = [
        t for t in before if t.speaker not in ("J", turn.speaker) and t.status == LiveTurn.Status.DONE
    ]
    return LLMRequest(
        model=config.model,
        messages=[{"role": "system", "content": system_prompt(session, turn.speaker, config)}]
        + conversation(session, turn, before),
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        seed=config.seed,
        hint={
            "side": side,
            "sources": session.claim.sources_for(side),
            "question": question.text if question else "",
            "opponent_last": opponents[-1].text if opponents else "",
        },
    )


def side_choice_request(session: LiveSession, config: DebaterConfig) -> LLMRequest:
    """Ask the consultant which side it prefers to argue (the paper's climate set-up)."""
    claim = session.claim
    prompt = (
        f'Claim: "{claim.text}"\n\nSources for "true":\n{format_sources(claim.sources_true)}\n\n'
        f'Sources for "false":\n{format_sources(claim.sources_false)}\n\n'
        "You will advise a person on this claim. Which side do you choose to argue? "
        "Answer with one word: true or false."
    )
    return LLMRequest(
        model=config.model,
        messages=[{"role": "user", "content": prompt}],
        temperature=0.0,
        max_tokens=5,
        seed=config.seed,
        hint={"task": "side_choice", "preferred": claim.true_side},
    )
