"""`manage.py export_csv TABLE --study SLUG [--out FILE]`: one export table, or the codebook."""

import sys

from django.core.management.base import BaseCommand, CommandError

from analysis.exports import TABLES, codebook_lines, csv_lines
from studies.models import Study


class Command(BaseCommand):
    help = "Write a study's tidy CSV table (or the codebook) to a file or standard output."

    def add_arguments(self, parser):
        parser.add_argument("table", choices=[*TABLES, "codebook"])
        parser.add_argument("--study", help="study slug (not needed for the codebook)")
        parser.add_argument("--out", help="file to write (default: standard output)")

    def handle(self, *args, table: str, study: str | None, out: str | None, **options):
        if table == "codebook":
            lines = codebook_lines()
        else:
            if not study:
                raise CommandError("--study is required for a table")
            found = Study.objects.filter(slug=study).first()
            if found is None:
                raise CommandError(f"no study with slug {study!r}")
            lines = csv_lines(TABLES[table], found)
        handle = open(out, "w", encoding="utf-8", newline="") if out else sys.stdout
        try:
            for line in lines:
                handle.write(line)
        finally:
            if out:
                handle.close()
