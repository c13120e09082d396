"""`manage.py import_cases FILE`: cases and dialogues of design A (docs/case-format.md)."""

from debates.dialogues.imports import cases_import
from debates.imports import ImportCommand


class Command(ImportCommand):
    help = "Import cases and dialogues from a rostrum.cases/1 JSON file (docs/case-format.md)."

    @staticmethod
    def importer(text: str, path: str):
        return cases_import(text=text)
