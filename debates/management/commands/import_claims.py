"""`manage.py import_claims FILE`: claims of design B (docs/claim-format.md)."""

from debates.imports import ImportCommand
from debates.live.imports import claims_import


class Command(ImportCommand):
    help = "Import claims from a rostrum.claims/1 JSON or CSV file (docs/claim-format.md)."

    @staticmethod
    def importer(text: str, path: str):
        return claims_import(text=text, filename=path)
