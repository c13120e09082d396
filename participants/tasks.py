"""Periodic Celery tasks of the participants app."""

from celery import shared_task

from participants import prolific, prolific_review, services


@shared_task(ignore_result=True)
def release_expired_leases() -> int:
    """Periodic (Celery beat): participants past the study's time limit free their place."""
    return services.release_expired_leases()


@shared_task(ignore_result=True)
def prolific_sync() -> int:
    """Periodic (Celery beat): sync the submissions of studies running on Prolific (RETURNED,
    TIMED-OUT and REJECTED free their places), then settle bonuses whose sending was cut short by
    looking at Prolific's side (never by paying again). Nothing without PROLIFIC_API_TOKEN."""
    freed = prolific.prolific_sync_running()
    prolific_review.bonuses_settle()
    return freed
