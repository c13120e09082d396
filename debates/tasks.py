"""Celery tasks of live debates. Tasks take ids, call services, and are idempotent."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from debates import live_services, runner
from debates.realtime import TurnFailed, broadcast


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def generate_turn(turn_id: int) -> None:
    """Write one AI turn. A duplicate or a redelivery finds the turn taken and does nothing."""
    runner.run_in_process_loop(turn_id, timeout=settings.LLM_TIMEOUT_S * (settings.LLM_MAX_RETRIES + 2))


@shared_task(ignore_result=True)
def requeue_stuck_turns() -> int:
    """The watchdog (Celery beat): re-queue turns no live worker is writing, and tell the
    participant about turns that have used up their attempts."""
    for session_id, seq in live_services.turns_give_up():
        broadcast(
            session_id,
            TurnFailed(
                type="turn.failed",
                seq=seq,
                message="The AI could not reply just now. You can try again, or go on to your final answer.",
                can_retry=True,
            ),
        )
    stuck = live_services.stuck_turns()
    for turn_id in stuck:
        runner.dispatch(turn_id)
    return len(stuck)
