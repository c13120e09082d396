"""`manage.py import_instances FILE`: an instance set of design D (docs/instance-format.md)."""

from debates.imports import ImportCommand, ImportInvalid, ImportProblem
from debates.pairwise.imports import set_import


class Command(ImportCommand):
    help = (
        "Import an instance set from a rostrum.instances/1 JSON file (docs/instance-format.md); "
        "it creates the set it names, or replaces it if no annotator has used it."
    )

    @staticmethod
    def importer(text: str, path: str):
        if not path.lower().endswith(".json"):
            problem = ImportProblem(
                1, "", "give a .json file (a CSV file goes into a set chosen in the admin)"
            )
            raise ImportInvalid([problem])
        pool = set_import(text=text, filename=path)
        return f"instance set {pool.slug!r}: {pool.instances.count()} instances"
