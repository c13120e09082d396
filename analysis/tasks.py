"""Celery tasks of the analysis app: computing a report, and the nightly reports."""

from celery import shared_task

from analysis import reports


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_report(report_id: int) -> None:
    """Compute one queued report; a duplicate delivery finds it taken and does nothing."""
    reports.report_run(report_id=report_id)


@shared_task(ignore_result=True)
def nightly_reports() -> int:
    """Periodic (Celery beat): queue the report of every live or recently closed study."""
    return len(reports.reports_nightly())
