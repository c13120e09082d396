"""Periodic Celery tasks of the participants app."""

from celery import shared_task

from participants import services


@shared_task(ignore_result=True)
def release_expired_leases() -> int:
    """Periodic (Celery beat): participants past the study's time limit free their place."""
    return services.release_expired_leases()
