"""The import formats, as the admin's import pages present them: each format's documentation
(docs/*.md), its JSON Schema published with the docs (docs/schemas/*.schema.json) and example
files to download (the demo's files, or small examples in docs/examples/). The importers stay
the judges of a file (they check more than a schema can: references between records, content
a running study uses); the schema describes the shape they accept, and a test keeps the two
in step."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib import admin
from django.http import Http404, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse

DOCS = Path(settings.BASE_DIR) / "docs"
DEMO = Path(__file__).resolve().parent / "demo"


@dataclass(frozen=True)
class Format:
    key: str
    name: str
    title: str
    intro: str
    doc: str
    examples: tuple[tuple[str, Path], ...]

    @property
    def schema(self) -> Path:
        return DOCS / "schemas" / f"{self.key}.schema.json"

    def example(self, filename: str) -> Path | None:
        return next((p for name, p in self.examples if name == filename), None)


FORMATS = {
    f.key: f
    for f in [
        Format(
            key="cases",
            name="rostrum.cases/1",
            title="Cases and dialogues",
            intro="Upload a rostrum.cases/1 JSON file with cases (detective mysteries) and their "
            "pre-generated dialogues (study design A).",
            doc="case-format.md",
            examples=(("mystery_cases.json", DEMO / "mystery_cases.json"),),
        ),
        Format(
            key="claims",
            name="rostrum.claims/1",
            title="Claims",
            intro="Upload a rostrum.claims/1 file, JSON or CSV, with the claims of live debates and "
            "consultancy (study design B) and each side's sources.",
            doc="claim-format.md",
            examples=(
                ("claims.json", DEMO / "claims.json"),
                ("claims.csv", DOCS / "examples" / "claims.csv"),
            ),
        ),
        Format(
            key="instances",
            name="rostrum.instances/1",
            title="Instance sets",
            intro="Upload a rostrum.instances/1 file: an instance set of pairwise comparisons (study "
            "design D) as JSON, or its instances as CSV into a set chosen below.",
            doc="instance-format.md",
            examples=(
                ("instances.json", DOCS / "examples" / "instances.json"),
                ("instances.csv", DOCS / "examples" / "instances.csv"),
            ),
        ),
    ]
}


def format_context(key: str) -> dict:
    """What an import page shows of its format: the documentation, schema and examples links."""
    fmt = FORMATS[key]
    return {
        "name": fmt.name,
        "intro": fmt.intro,
        "doc_url": reverse(f"admin:format_{key}"),
        "schema_url": reverse(f"admin:format_{key}_schema"),
        "examples": [(name, reverse(f"admin:format_{key}_example", args=[name])) for name, _ in fmt.examples],
    }


def format_urls(admin_site, key: str) -> list:
    """The format's pages, under the admin of what it imports (staff only)."""
    wrap = admin_site.admin_view
    return [
        path("format/", wrap(doc_view), {"key": key}, name=f"format_{key}"),
        path("format/schema.json", wrap(schema_view), {"key": key}, name=f"format_{key}_schema"),
        path(
            "format/examples/<str:filename>",
            wrap(example_view),
            {"key": key},
            name=f"format_{key}_example",
        ),
    ]


def doc_view(request, key: str):
    fmt = FORMATS[key]
    context = {
        **admin.site.each_context(request),
        "title": f"{fmt.title}: the {fmt.name} format",
        "format": format_context(key),
        "text": (DOCS / fmt.doc).read_text(encoding="utf-8"),
    }
    return TemplateResponse(request, "admin/rostrum/format.html", context)


def schema_view(request, key: str):
    schema = json.loads(FORMATS[key].schema.read_text(encoding="utf-8"))
    body = json.dumps(schema, indent=2, ensure_ascii=False)
    response = HttpResponse(body, content_type="application/schema+json; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="{key}.schema.json"'
    return response


def example_view(request, key: str, filename: str):
    found = FORMATS[key].example(filename)
    if found is None:
        raise Http404("No such example")
    kind = "application/json" if filename.endswith(".json") else "text/csv; charset=utf-8"
    response = HttpResponse(found.read_bytes(), content_type=kind)  # small files, read whole
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
