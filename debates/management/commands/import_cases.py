from django.core.management.base import BaseCommand, CommandError

from debates.importing import ImportInvalid, cases_import, decode


class Command(BaseCommand):
    help = "Import cases and dialogues from a rostrum.cases/1 JSON file (docs/case-format.md)."

    def add_arguments(self, parser):
        parser.add_argument("path", help="the JSON file")

    def handle(self, *args, path: str, **options):
        try:
            with open(path, "rb") as handle:
                summary = cases_import(text=decode(handle.read()))
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror}") from None
        except ImportInvalid as invalid:
            lines = "\n".join(f"  {p}" for p in invalid.problems)
            raise CommandError(f"{path}: {invalid}\n{lines}") from None
        self.stdout.write(self.style.SUCCESS(f"Imported {path}: {summary}"))
