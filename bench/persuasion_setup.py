"""Set-up and read-back for the persuasion benchmark (run with the server's environment).

    python -m bench.persuasion_setup setup --dialogues N --warmup W --agent-model M \
        --classifier-model C --out FILE
    python -m bench.persuasion_setup collect --dialogues FILE --out FILE

`setup` builds the demo's design-C study (`debates.demo.loader.persuasion_study()`, as the
demo and the tests do) under the slug `bench-persuasion`, with the participant always on
the pro side (who opens the dialogue), no reply delay and the classifier model given; the
demo agent `demo-yielding` is pointed at the agent model. Per participant: `participant_enter`
with a random PROLIFIC_PID, placed at the dialogue step, and seated by
`services.dialogue_assign()` against the agent: the participant is due to write the first
turn. It writes every participant token and dialogue id.

`collect` reads back, for the dialogues given, every turn and every model call (with the
SHA-256 of the messages sent, as `devtools.fakellm.messages_digest` computes it).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import secrets
import sys
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
if not os.environ.get("DATABASE_URL"):  # never write benchmark rows into the default var/ database
    sys.exit("bench.persuasion_setup: DATABASE_URL must name the benchmark's own database")

import django  # noqa: E402

django.setup()

from django.utils import timezone  # noqa: E402

from devtools.fakellm import messages_digest, reply_text  # noqa: E402

SLUG = "bench-persuasion"
AGENT = "demo-yielding"
WARMUP_AGENT = "bench-warmup"


def seat(study, step, design) -> dict:
    from debates.persuasion import services
    from participants.models import Participant
    from participants.services import participant_enter

    now = timezone.now()
    participant = participant_enter(
        study=study,
        prolific_pid=secrets.token_hex(12),
        prolific_study_id=secrets.token_hex(12),
        prolific_session_id=secrets.token_hex(12),
        user_agent="rostrum-bench-persuasion",
    )
    # The consent page is not what is measured: place the participant at the dialogue step.
    Participant.objects.filter(pk=participant.pk).update(position=step.position, shown_at=now)
    participant.position = step.position
    due = services.dialogue_assign(participant=participant, position=step.position, design=design, now=now)
    assert due is None, "the participant (pro) opens the dialogue"
    dialogue = services.dialogue_of(participant, step.position)
    return {"token": participant.token, "dialogue_id": dialogue.pk, "participant_id": participant.pk}


def setup(args) -> dict:
    import dataclasses

    from debates.demo.loader import persuasion_study
    from debates.demo.persuasion import PERSUASION_LIVE_STUDY
    from debates.models import AgentConfig
    from participants.services import kind_for
    from studies.services import study_steps

    steps = copy.deepcopy(PERSUASION_LIVE_STUDY["steps"])
    for step in steps:
        if step["kind"] == "persuasion_dialogue":
            step["config"].update(
                side="pro",
                delay_min_s=0,
                delay_max_s=0,
                classifier_model=args.classifier_model,
                max_turns=200,
            )
    total = args.dialogues + args.warmup
    study = persuasion_study(slug=SLUG, steps=steps, target_per_item=max(1000, total))
    AgentConfig.objects.filter(name=AGENT).update(model=args.agent_model, offline_concede_after=None)
    base = AgentConfig.objects.get(name=AGENT)
    warm = AgentConfig.objects.create(
        name=WARMUP_AGENT, model=args.warmup_model, persona=base.persona, max_tokens=base.max_tokens
    )
    step = next(s for s in study_steps(study) if s.kind == "persuasion_dialogue")
    design = kind_for(step).design(step)
    out = {"study": study.slug, "position": step.position, "agent_model": args.agent_model}
    out["warmup"] = [
        seat(study, step, dataclasses.replace(design, agent=warm.name)) for _ in range(args.warmup)
    ]
    out["dialogues"] = [seat(study, step, design) for _ in range(args.dialogues)]
    return out


def collect(args) -> dict:
    from debates.models import LLMCall, PersuasionTurn

    ids = json.loads(Path(args.dialogues).read_text())
    turns: dict[str, list] = {}
    for t in PersuasionTurn.objects.filter(dialogue_id__in=ids).order_by("dialogue_id", "seq"):
        turns.setdefault(str(t.dialogue_id), []).append(
            {
                "id": t.pk,
                "seq": t.seq,
                "author": t.author,
                "status": t.status,
                "attempts": t.attempts,
                "text": t.text,
                "error": t.error,
                "fallback": t.fallback,
                "kinds": [s.get("kind") for s in t.sentences or []],
                "created_at": t.created_at.timestamp(),
                "started_at": t.started_at.timestamp() if t.started_at else None,
                "finished_at": t.finished_at.timestamp() if t.finished_at else None,
            }
        )
    calls: dict[str, list] = {}
    rows = LLMCall.objects.filter(persuasion_dialogue_id__in=ids).select_related("persuasion_turn")
    for c in rows.order_by("pk"):
        calls.setdefault(str(c.persuasion_dialogue_id), []).append(
            {
                "turn_seq": c.persuasion_turn.seq if c.persuasion_turn else None,
                "role": c.role,
                "model": c.model,
                "messages_sha256": messages_digest(c.messages),
                "expected_text": reply_text(c.model, c.messages, (c.params or {}).get("max_tokens")),
                "ttft_ms": c.ttft_ms,
                "total_ms": c.total_ms,
                "error_kind": c.error_kind,
                "created_at": c.created_at.timestamp(),
            }
        )
    return {"turns": turns, "calls": calls}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup")
    s.add_argument("--dialogues", type=int, required=True)
    s.add_argument("--warmup", type=int, default=0)
    s.add_argument("--agent-model", required=True)
    s.add_argument("--classifier-model", required=True)
    s.add_argument("--warmup-model", default="pagent-warmup:tokens=5")
    s.add_argument("--out", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--dialogues", required=True, help="a JSON file with a list of dialogue ids")
    c.add_argument("--out", required=True)
    args = parser.parse_args()
    result = setup(args) if args.command == "setup" else collect(args)
    Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
