"""`manage.py analyze <study> [--out DIR]` and `manage.py analyze --from-csv DIR --design
A|B|C|D [--out DIR]`: a report folder (report.html, results.json, plots, the CSVs used)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from analysis.reports import DESIGN_NAMES, analyze_study, build_report
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Compute a study's report into a folder, or the same analysis of CSV files in the "
        "platform's export format (--from-csv), e.g. merged from several studies."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", nargs="?", help="the study's slug")
        parser.add_argument("--from-csv", metavar="DIR", help="analyse the export CSV files in DIR instead")
        parser.add_argument(
            "--design",
            choices=sorted(DESIGN_NAMES),
            help="with --from-csv: the design (C reads persuasion_dialogues.csv, persuasion_moves.csv and, "
            "for the crowd's ranking, comparisons.csv)",
        )
        parser.add_argument("--out", metavar="DIR", help="the report folder (default: var/reports/…)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resamples (default 0)")
        parser.add_argument(
            "--raw-ids", action="store_true", help="keep Prolific's ids in the CSVs (default: pseudonyms)"
        )

    def handle(self, *args, study, from_csv, design, out, seed, raw_ids, **options):
        if bool(study) == bool(from_csv):
            raise CommandError("give a study's slug, or --from-csv DIR with --design")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        if from_csv:
            source = Path(from_csv)
            if not design:
                raise CommandError("--from-csv needs --design A, B, C or D")
            if not source.is_dir():
                raise CommandError(f"{source} is not a folder")
            folder = Path(out) if out else Path("var/reports") / f"from-csv-{design}-{stamp}"
            results = self.run(lambda: build_report(source, folder, design, seed=seed))
        else:
            found = Study.objects.filter(slug=study).first()
            if found is None:
                raise CommandError(f"no study with slug {study!r}")
            folder = Path(out) if out else Path("var/reports") / f"{found.slug}-{stamp}"
            results = self.run(lambda: analyze_study(found, folder, seed=seed, pseudonyms=not raw_ids))
        self.stdout.write(self.style.SUCCESS(f"Report of design {results['design']} written to {folder}/"))
        self.stdout.write(f"  {folder / 'report.html'}\n  {folder / 'results.json'}")

    def run(self, compute):
        try:
            return compute()
        except ValueError as error:  # a missing column, an unknown design, an empty study, …
            raise CommandError(str(error)) from None
