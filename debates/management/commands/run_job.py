"""`manage.py run_job NAME`: start or resume an LLM job and run it to its end in the
foreground (the demo, CI without workers)."""

from django.core.management.base import BaseCommand, CommandError

from debates.jobs import services, tasks
from debates.models import Job


class Command(BaseCommand):
    help = "Run an LLM job (debates.jobs) to its end here, without workers."

    def add_arguments(self, parser):
        parser.add_argument("name", help="The job's name (slug).")
        parser.add_argument("--budget", type=str, default=None, help="Set the job's budget (USD) first.")

    def handle(self, *args, name: str, budget: str | None = None, **options):
        job = Job.objects.filter(name=name).first()
        if job is None:
            raise CommandError(f"No job named {name!r}.")
        if budget is not None:
            Job.objects.filter(pk=job.pk).update(budget_usd=budget)
        try:
            status = tasks.job_run_here(job.pk)
        except services.JobError as error:
            raise CommandError(str(error)) from error
        job.refresh_from_db()
        p = services.job_progress(job)
        self.stdout.write(
            f"{job.name}: {job.get_status_display()} — {p['done']} done, {p['failed']} failed, "
            f"{p['pending']} pending of {p['total']}; spent ${p['spent_usd']}. {job.note}".rstrip()
        )
        if status not in (Job.Status.DONE,):
            self.stderr.write(f"The job stopped: {job.get_status_display().lower()}.")
