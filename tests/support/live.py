"""Live debates in unit tests: writing every due AI turn here and now (no worker runs)."""

from __future__ import annotations

from asgiref.sync import async_to_sync

from debates.live import runner
from debates.models import LiveTurn


def drain_turns(session_id: int, limit: int = 20) -> int:
    """Generate every AI turn that is due, here and now; returns how many were written."""
    done = 0
    for _ in range(limit):
        turn = LiveTurn.objects.filter(session_id=session_id, status=LiveTurn.Status.PENDING).first()
        if turn is None:
            return done
        async_to_sync(runner.run_turn)(turn.pk)
        done += 1
    raise AssertionError("turns kept coming")
