from django.core.management.base import BaseCommand, CommandError

from debates.claims_import import claims_import
from debates.importing import ImportInvalid, decode


class Command(BaseCommand):
    help = "Import claims from a rostrum.claims/1 JSON or CSV file (docs/claim-format.md)."

    def add_arguments(self, parser):
        parser.add_argument("path", help="the .json or .csv file")

    def handle(self, *args, path: str, **options):
        try:
            with open(path, "rb") as handle:
                summary = claims_import(text=decode(handle.read()), filename=path)
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror}") from None
        except ImportInvalid as invalid:
            lines = "\n".join(f"  {p}" for p in invalid.problems)
            raise CommandError(f"{path}: {invalid}\n{lines}") from None
        self.stdout.write(self.style.SUCCESS(f"Imported {path}: {summary}"))
