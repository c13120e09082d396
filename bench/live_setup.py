"""Set-up and read-back for the live streams benchmark (run with the server's environment).

    python -m bench.live_setup setup --streams N --idle M --warmup W --model MODEL --out FILE
    python -m bench.live_setup collect --sessions FILE --out FILE

`setup` builds the demo's design-B study (`debates.demo.loader.claim_study()`, as the demo
and the tests do) and, through the services, participants at its first claim step, each
with a live debate session whose first round is over and whose judge is due to write: the
state in which a judge's question starts the next pair of AI turns (A, then B). It writes
every participant token and session id.

`collect` reads back, for the sessions given, every turn and every model call (with the
SHA-256 of the messages sent, as `devtools.fakellm.messages_digest` computes it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import secrets
import sys
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
if not os.environ.get("DATABASE_URL"):  # never write benchmark rows into the default var/ database
    sys.exit("bench.live_setup: DATABASE_URL must name the benchmark's own database")

import django  # noqa: E402

django.setup()

from django.db import transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from devtools.fakellm import messages_digest, reply_text  # noqa: E402

WARMUP_CONFIG = "bench-warmup"


def make_session(study, step, design, group: str, round_text_model: str, warmup_config=None) -> dict:
    """A participant through the services, at the claim step, with a debate session in its
    chat phase and round 1 (A, B) written: the judge is due to ask or pass."""
    from debates.live import services as live_services
    from debates.models import LiveSession, LiveTurn
    from participants.models import Participant
    from participants.services import participant_enter

    now = timezone.now()
    participant = participant_enter(
        study=study,
        prolific_pid=secrets.token_hex(12),
        prolific_study_id=secrets.token_hex(12),
        prolific_session_id=secrets.token_hex(12),
        user_agent="rostrum-bench-live",
    )
    # Screening and the pages before the claim are not what is measured: place the
    # participant in a screening group at the claim step directly.
    Participant.objects.filter(pk=participant.pk).update(group=group, position=step.position, shown_at=now)
    participant.group, participant.position = group, step.position
    live_services.live_session_assign(participant=participant, position=step.position, design=design, now=now)
    session = LiveSession.objects.get(participant=participant, position=step.position)
    # The initial judgement as live_initial_record stores it, without creating turn 1: round 1
    # is written below as if the debaters had already spoken.
    changes = dict(
        initial_answer=True,
        initial_confidence=50,
        phase=LiveSession.Phase.CHAT,
        chat_started_at=now,
        last_activity_at=now,
    )
    if warmup_config is not None:
        changes.update(debater_a=warmup_config, debater_b=warmup_config)
    LiveSession.objects.filter(pk=session.pk).update(**changes)
    with transaction.atomic():
        for seq, speaker in ((1, "A"), (2, "B")):
            text = reply_text(
                round_text_model, [{"role": "user", "content": f"round 1 {session.pk} {speaker}"}]
            )
            LiveTurn.objects.create(
                session=session,
                seq=seq,
                round=1,
                speaker=speaker,
                text=text,
                status=LiveTurn.Status.DONE,
                attempts=1,
                created_at=now,
                started_at=now,
                finished_at=now,
            )
    return {
        "token": participant.token,
        "session_id": session.pk,
        "participant_id": participant.pk,
        "claim": session.claim.slug,
        "side_a": session.side_a,
    }


def setup(args) -> dict:
    from debates.demo.loader import claim_study
    from debates.models import DebaterConfig, LiveSession
    from participants.services import kind_for
    from studies.services import study_steps

    total = args.streams + args.idle + args.warmup
    study = claim_study(slug="bench-live", target_per_item=max(1000, total))
    DebaterConfig.objects.update(model=args.model)
    warm = DebaterConfig.objects.create(
        name=WARMUP_CONFIG, model=args.warmup_model, max_tokens=400, max_words=120, temperature=0.2
    )
    step = next(s for s in study_steps(study) if s.kind == "claim_session")
    # Every session a debate, so each judge's question streams A then B.
    design = dataclasses.replace(kind_for(step).design(step), protocols=(LiveSession.Protocol.DEBATE,))
    groups = ["mainstream", "skeptical"]
    out = {"study": study.slug, "position": step.position, "model": args.model}
    for name, count in (("warmup", args.warmup), ("streams", args.streams), ("idle", args.idle)):
        out[name] = [
            make_session(
                study,
                step,
                design,
                groups[i % 2],
                args.model,
                warmup_config=warm if name == "warmup" else None,
            )
            for i in range(count)
        ]
    sessions = LiveSession.objects.filter(participant__study=study)
    out["check"] = {
        "sessions": sessions.count(),
        "debates": sessions.filter(protocol="debate", phase="chat").count(),
    }
    return out


def collect(args) -> dict:
    from debates.models import LiveTurn, LLMCall

    ids = json.loads(Path(args.sessions).read_text())
    turns = {}
    for t in LiveTurn.objects.filter(session_id__in=ids).order_by("session_id", "seq"):
        turns.setdefault(str(t.session_id), []).append(
            {
                "id": t.pk,
                "seq": t.seq,
                "speaker": t.speaker,
                "status": t.status,
                "attempts": t.attempts,
                "text": t.text,
                "error": t.error,
                "created_at": t.created_at.timestamp(),
                "started_at": t.started_at.timestamp() if t.started_at else None,
                "finished_at": t.finished_at.timestamp() if t.finished_at else None,
            }
        )
    calls = {}
    for c in LLMCall.objects.filter(session_id__in=ids).select_related("turn").order_by("pk"):
        calls.setdefault(str(c.session_id), []).append(
            {
                "turn_seq": c.turn.seq if c.turn else None,
                "role": c.role,
                "model": c.model,
                "messages_sha256": messages_digest(c.messages),
                "max_tokens": (c.params or {}).get("max_tokens"),
                "expected_text": reply_text(c.model, c.messages, (c.params or {}).get("max_tokens")),
                "ttft_ms": c.ttft_ms,
                "total_ms": c.total_ms,
                "tokens_out": c.tokens_out,
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
    s.add_argument("--streams", type=int, required=True)
    s.add_argument("--idle", type=int, default=0)
    s.add_argument("--warmup", type=int, default=0)
    s.add_argument("--model", required=True)
    s.add_argument("--warmup-model", default="fake-warmup:tokens=5")
    s.add_argument("--out", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--sessions", required=True, help="a JSON file with a list of session ids")
    c.add_argument("--out", required=True)
    args = parser.parse_args()
    result = setup(args) if args.command == "setup" else collect(args)
    Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
