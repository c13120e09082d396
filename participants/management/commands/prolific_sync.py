"""`manage.py prolific_sync SLUG`: what the periodic task does for one study, by hand."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from participants.prolific import ProlificError, prolific_sync
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Read a study's submissions on Prolific; free the places of those returned, timed out or "
        "rejected; say where Prolific and Rostrum disagree."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["slug"]).first()
        if study is None:
            raise CommandError(f"No study {options['slug']!r}.")
        try:
            report = prolific_sync(study=study)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        except ProlificError as error:
            raise CommandError(f"Prolific: {error.message}") from None
        self.stdout.write(
            f"{report.seen} submission(s) on Prolific; {report.freed} place(s) freed; "
            f"{report.disagreements} disagreement(s) (see the study's Prolific page)."
        )
