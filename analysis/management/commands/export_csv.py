"""`manage.py export_csv TABLE --study SLUG [--out FILE]`: one export table, the codebook, or
(`--bundle`) one zip with every table, the codebook and the study's configuration.
`manage.py export_csv persuasion_dialogues|persuasion_moves --batch NAME`: the dialogues of a
model-versus-model batch (which belongs to no study)."""

import sys

from django.core.management.base import BaseCommand, CommandError

from analysis.exports import TABLES, codebook_lines, csv_lines
from analysis.exports.bundle import bundle_chunks
from analysis.exports.persuasion import PERSUASION_TABLES, batch_csv_lines
from debates.models import PersuasionBatch
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write a study's tidy CSV table, its codebook, or a zip of everything, to a file or standard output."
    )

    def add_arguments(self, parser):
        parser.add_argument("table", nargs="?", choices=[*TABLES, "codebook"])
        parser.add_argument("--study", help="study slug (not needed for the general codebook)")
        parser.add_argument(
            "--batch",
            metavar="NAME",
            help=f"a model-versus-model batch instead of a study (tables {', '.join(PERSUASION_TABLES)})",
        )
        parser.add_argument("--bundle", action="store_true", help="one zip with every table (needs --out)")
        parser.add_argument("--out", help="file to write (default: standard output)")
        parser.add_argument("--pseudonyms", action="store_true", help="replace Prolific's ids by pseudonyms")

    def handle(self, *args, table, study, batch, bundle, out, pseudonyms, **options):
        found = None
        if batch:
            if study or bundle:
                raise CommandError("--batch cannot be combined with --study or --bundle")
            if table not in PERSUASION_TABLES:
                raise CommandError(f"--batch exports one of: {', '.join(PERSUASION_TABLES)}")
            chosen = PersuasionBatch.objects.filter(name=batch).first()
            if chosen is None:
                raise CommandError(f"no model-versus-model batch named {batch!r}")
            self.write(batch_csv_lines(PERSUASION_TABLES[table], chosen), out)
            return
        if study:
            found = Study.objects.filter(slug=study).first()
            if found is None:
                raise CommandError(f"no study with slug {study!r}")
        if bundle:
            if found is None or not out:
                raise CommandError("--bundle needs --study and --out FILE.zip")
            with open(out, "wb") as handle:
                for chunk in bundle_chunks(found, pseudonyms=pseudonyms):
                    handle.write(chunk)
            return
        if table is None:
            raise CommandError("name a table, 'codebook', or use --bundle")
        if table == "codebook":
            lines = codebook_lines(found)
        elif found is None:
            raise CommandError("--study is required for a table")
        else:
            lines = csv_lines(TABLES[table], found, pseudonyms=pseudonyms)
        self.write(lines, out)

    def write(self, lines, out):
        handle = open(out, "w", encoding="utf-8", newline="") if out else sys.stdout
        try:
            for line in lines:
                handle.write(line)
        finally:
            if out:
                handle.close()
