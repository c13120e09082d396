"""Persuasion dialogues (design C) written straight into the database, for the export and
report tests: a study with a persuasion step, participants, agents, dialogues with their
turns (classified sentences, stores) and model calls."""

from __future__ import annotations

import secrets
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from debates.models import AgentConfig, LLMCall, PersuasionBatch, PersuasionDialogue, PersuasionTurn, Topic
from participants.models import Participant
from studies.models import Step, Study
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

T0 = timezone.now().replace(microsecond=0) - timedelta(days=1)


def persuasion_study(**fields) -> Study:
    """consent → a persuasion dialogue step (added directly: its kind belongs to the design's
    own package) → debrief."""
    study = build_study([CONSENT_STEP, DEBRIEF_STEP], **fields)
    Step.objects.filter(study=study, position=2).update(position=3)
    Step.objects.create(study=study, position=2, kind="persuasion_dialogue", title="Debate", config={})
    Study.objects.filter(pk=study.pk).update(steps_version=study.steps_version + 1)
    study.refresh_from_db()
    return study


def person(study: Study, pid: str | None = None, *, preview: bool = False, **fields) -> Participant:
    return Participant.objects.create(
        study=study,
        prolific_pid=pid or secrets.token_hex(12),
        is_preview=preview,
        status=fields.pop("status", "completed"),
        started_at=T0,
        expires_at=T0 + timedelta(hours=2),
        last_seen_at=T0,
        finished_at=T0 + timedelta(minutes=30),
        **fields,
    )


def topic(slug: str = "school-uniforms", **fields) -> Topic:
    return Topic.objects.get_or_create(
        slug=slug,
        defaults={
            "text": "Should schools require uniforms?",
            "pro_claim": "Schools should require uniforms.",
            "con_claim": "Schools should not require uniforms.",
            **fields,
        },
    )[0]


def agent(name: str, **fields) -> AgentConfig:
    return AgentConfig.objects.get_or_create(name=name, defaults=fields)[0]


def batch(name: str = "mvm-1", **fields) -> PersuasionBatch:
    return PersuasionBatch.objects.create(name=name, **fields)


def dialogue(
    *,
    pro=None,
    con=None,
    study: Study | None = None,
    batch: PersuasionBatch | None = None,
    winner: str = "",
    status: str = "finished",
    end_reason: str | None = None,
    topic_: Topic | None = None,
    ended_by: str = "",
    **fields,
) -> PersuasionDialogue:
    """`pro` and `con` are each a Participant or an AgentConfig."""
    kinds = ["human" if isinstance(x, Participant) else "ai" for x in (pro, con)]
    pairing = (
        "human_human" if kinds == ["human", "human"] else "ai_ai" if kinds == ["ai", "ai"] else "human_ai"
    )
    if end_reason is None:
        end_reason = "conceded" if winner else ("turn_limit" if status == "finished" else "")
    d = PersuasionDialogue.objects.create(
        study=study,
        position=fields.pop("position", 2 if study else None),
        batch=batch,
        topic=topic_ or topic(),
        pro_participant=pro if isinstance(pro, Participant) else None,
        con_participant=con if isinstance(con, Participant) else None,
        pro_agent=pro if isinstance(pro, AgentConfig) else None,
        con_agent=con if isinstance(con, AgentConfig) else None,
        pairing=pairing,
        status=status,
        winner=winner,
        end_reason=end_reason,
        ended_by=ended_by,
        created_at=T0,
        started_at=T0 + timedelta(seconds=5),
        finished_at=T0 + timedelta(seconds=125) if status in ("finished", "abandoned") else None,
        **fields,
    )
    return d


def sentence(text: str, kind: str | None, target: int | None = 1, **fields) -> dict:
    return {
        "text": text,
        "kind": kind,
        "target": target,
        "proposition": fields.pop("proposition", text),
        "premises": fields.pop("premises", []),
        "legal": fields.pop("legal", True),
        "reason": fields.pop("reason", ""),
        "fallback": fields.pop("fallback", False),
    }


def turn(d: PersuasionDialogue, seq: int, speaker: str, sentences: list[dict], **fields) -> PersuasionTurn:
    author = "human" if d.is_human(speaker) else "agent"
    return PersuasionTurn.objects.create(
        dialogue=d,
        seq=seq,
        speaker=speaker,
        author=author,
        text=" ".join(s["text"] for s in sentences),
        status="done",
        sentences=sentences,
        stores_after=fields.pop("stores_after", {"pro": [d.topic.pro_claim], "con": [d.topic.con_claim]}),
        created_at=T0 + timedelta(seconds=10 * seq),
        finished_at=T0 + timedelta(seconds=10 * seq + 5),
        **fields,
    )


def call(
    d: PersuasionDialogue, cost: str | None, *, turn_: PersuasionTurn | None = None, **fields
) -> LLMCall:
    return LLMCall.objects.create(
        study=d.study,
        persuasion_dialogue=d,
        persuasion_turn=turn_,
        role=fields.pop("role", "persuasion_agent"),
        backend="offline",
        model="gpt-4o",
        prompt_hash="0" * 64,
        tokens_in=fields.pop("tokens_in", 100),
        tokens_out=fields.pop("tokens_out", 20),
        cost_usd=None if cost is None else Decimal(cost),
        created_at=T0,
        **fields,
    )
