"""Each import format's documentation, JSON Schema and example files: linked from its import
page, served to staff only, and in step with the importer (the examples import cleanly and
validate against the schema; the importer and the schema refuse the same broken files)."""

from __future__ import annotations

import copy
import json

import pytest
from jsonschema import Draft202012Validator

from debates.dialogues.imports import cases_import
from debates.formats import FORMATS
from debates.imports import ImportInvalid
from debates.live.imports import claims_import
from debates.models import Case, Claim, InstanceSet
from debates.pairwise.imports import set_import

IMPORT_PAGES = {
    "cases": "/admin/debates/case/import/",
    "claims": "/admin/debates/claim/import/",
    "instances": "/admin/debates/instanceset/import/",
}


def validator(key: str) -> Draft202012Validator:
    schema = json.loads(FORMATS[key].schema.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.mark.django_db
class TestImportPages:
    @pytest.mark.parametrize("key", sorted(IMPORT_PAGES))
    def test_each_import_page_links_its_documentation_schema_and_examples(self, experimenter, key):
        page = experimenter.get(IMPORT_PAGES[key]).content.decode()
        base = IMPORT_PAGES[key].removesuffix("import/")
        assert FORMATS[key].name in page
        assert f'href="{base}format/"' in page and f'href="{base}format/schema.json"' in page
        for name, _ in FORMATS[key].examples:
            assert f'href="{base}format/examples/{name}" download' in page

    @pytest.mark.parametrize("key", sorted(IMPORT_PAGES))
    def test_the_documentation_schema_and_examples_are_served_to_staff(self, experimenter, key):
        base = IMPORT_PAGES[key].removesuffix("import/")
        doc = experimenter.get(f"{base}format/")
        assert doc.status_code == 200
        text = doc.content.decode()
        assert "## Schema and examples" in text and f"schemas/{key}.schema.json" in text
        schema = experimenter.get(f"{base}format/schema.json")
        assert schema["Content-Type"].startswith("application/schema+json")
        assert json.loads(schema.content) == json.loads(FORMATS[key].schema.read_text(encoding="utf-8"))
        for name, path in FORMATS[key].examples:
            example = experimenter.get(f"{base}format/examples/{name}")
            assert example.status_code == 200 and example.content == path.read_bytes()
            assert example["Content-Disposition"] == f'attachment; filename="{name}"'
        assert experimenter.get(f"{base}format/examples/settings.py").status_code == 404

    def test_the_format_pages_refuse_outsiders(self, outsider):
        for url in ("/admin/debates/case/format/", "/admin/debates/claim/format/schema.json"):
            response = outsider.get(url)
            assert response.status_code == 302 and "/admin/login/" in response["Location"]
        response = outsider.get("/admin/debates/instanceset/format/examples/instances.json")
        assert response.status_code == 302


@pytest.mark.parametrize(
    ("key", "filename"),
    [
        (key, name)
        for key, fmt in sorted(FORMATS.items())
        for name, _ in fmt.examples
        if name.endswith(".json")
    ],
)
def test_every_json_example_validates_against_its_schema(key, filename):
    document = json.loads(FORMATS[key].example(filename).read_text(encoding="utf-8"))
    assert [e.message for e in validator(key).iter_errors(document)] == []


@pytest.mark.django_db
def test_every_example_file_imports_cleanly():
    text = {name: path.read_text(encoding="utf-8") for fmt in FORMATS.values() for name, path in fmt.examples}
    cases_import(text=text["mystery_cases.json"])
    assert Case.objects.filter(slug="lighthouse-ledger").exists()
    claims_import(text=text["claims.json"], filename="claims.json")
    claims_import(text=text["claims.csv"], filename="claims.csv")
    assert Claim.objects.filter(slug="goldfish-memory").exists()
    pool = set_import(text=text["instances.json"], filename="instances.json")
    assert pool.instances.count() == 2
    into = InstanceSet.objects.create(slug="from-csv", title="From CSV")
    set_import(text=text["instances.csv"], filename="instances.csv", into=into)
    assert into.instances.count() == 2


# --- The importer and the schema refuse the same broken files ---------------------------

TURNS = [{"speaker": "AB"[n % 2], "text": f"Turn {n + 1}."} for n in range(6)]
CASES = {
    "format": "rostrum.cases/1",
    "conditions": [{"slug": "gentle-nudge", "label": "Gentle nudge", "description": "A soft push."}],
    "cases": [
        {
            "slug": "tiny-case",
            "title": "A tiny case",
            "story": "Someone took the cake.",
            "suspects": [{"name": "Ann", "description": "A baker."}, {"name": "Bob"}],
            "culprit": "Ann",
            "rival": "Bob",
            "evidence": [{"number": 1, "text": "Crumbs on Ann's sleeve."}],
            "recall": {"question": "What was taken?", "options": ["A cake", "A pie"], "answer": "A cake"},
        }
    ],
    "dialogues": [
        {
            "slug": "tiny-case-baseline",
            "case": "tiny-case",
            "condition": "baseline",
            "active_side": "none",
            "variant": "",
            "side_a": "culprit",
            "turns": TURNS,
        }
    ],
}
CLAIMS = {
    "format": "rostrum.claims/1",
    "claims": [
        {
            "slug": "tiny-claim",
            "text": "Water boils at 100 degrees at sea level.",
            "truth": True,
            "domain": "physics",
            "sources": {
                "true": [{"title": "A textbook", "excerpt": "It does.", "url": "https://example.org"}]
            },
        }
    ],
}
INSTANCES = {
    "format": "rostrum.instances/1",
    "set": {"slug": "tiny-set", "title": "A tiny set", "seed": 1},
    "excerpts": [
        {
            "key": "d1",
            "debate": "d1",
            "speaker_a": "x",
            "stance": "for",
            "turns": [{"speaker": "A", "text": "Hi."}],
        },
        {
            "key": "d2",
            "debate": "d2",
            "speaker_a": "y",
            "stance": "for",
            "turns": [{"speaker": "A", "text": "Yo."}],
        },
    ],
    "instances": [{"number": 1, "excerpt_1": "d1", "excerpt_2": "d2"}],
}


def changed(document: dict, path: str, value) -> dict:
    """A copy of `document` with the value at `path` ("cases.0.suspects") set, or removed
    when `value` is REMOVE."""
    copied = copy.deepcopy(document)
    *parents, last = path.split(".")
    target = copied
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if value is REMOVE:
        del target[int(last) if isinstance(target, list) else last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return copied


REMOVE = object()
BROKEN = [
    ("cases", "format", "rostrum.cases/2"),
    ("cases", "extra", []),
    ("cases", "conditions.0.label", REMOVE),
    ("cases", "conditions.0.baseline", "yes"),
    ("cases", "cases.0.suspects", [{"name": "Ann"}]),
    ("cases", "cases.0.suspects.1.name", REMOVE),
    ("cases", "cases.0.suspects.1.age", 40),
    ("cases", "cases.0.title", "   "),
    ("cases", "cases.0.slug", "Tiny Case"),
    ("cases", "cases.0.evidence.0.number", 0),
    ("cases", "cases.0.evidence.0.number", "1"),
    ("cases", "cases.0.evidence", REMOVE),
    ("cases", "cases.0.recall.options", ["A cake"]),
    ("cases", "cases.0.recall.answer", REMOVE),
    ("cases", "dialogues.0.turns", TURNS[:1]),
    ("cases", "dialogues.0.turns.1.speaker", "A"),
    ("cases", "dialogues.0.turns.2.text", "x" * 10_001),
    ("cases", "dialogues.0.side_a", "left"),
    ("cases", "dialogues.0.active_side", "left"),
    ("claims", "claims.0.truth", "yes"),
    ("claims", "claims.0.domain", REMOVE),
    ("claims", "claims.0.text", "x" * 501),
    ("claims", "claims.0.sources.maybe", []),
    ("claims", "claims.0.sources.true.0.excerpt", REMOVE),
    ("claims", "claims", REMOVE),
    ("instances", "set", REMOVE),
    ("instances", "set.seed", 0),
    ("instances", "set.colour", "blue"),
    ("instances", "excerpts.0.stance", REMOVE),
    ("instances", "excerpts.0.turns", []),
    ("instances", "excerpts.1.turns.0.speaker", "C"),
    ("instances", "instances.0.number", "1"),
]
VALID = {"cases": CASES, "claims": CLAIMS, "instances": INSTANCES}
IMPORTERS = {
    "cases": lambda text: cases_import(text=text),
    "claims": lambda text: claims_import(text=text, filename="file.json"),
    "instances": lambda text: set_import(text=text, filename="file.json"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("key", sorted(VALID))
def test_the_importer_and_the_schema_accept_the_same_small_file(key):
    assert list(validator(key).iter_errors(VALID[key])) == []
    IMPORTERS[key](json.dumps(VALID[key]))


@pytest.mark.django_db
@pytest.mark.parametrize(("key", "path", "value"), BROKEN, ids=[f"{k}:{p}" for k, p, _ in BROKEN])
def test_the_importer_and_the_schema_refuse_the_same_broken_file(key, path, value):
    document = changed(VALID[key], path, value)
    assert list(validator(key).iter_errors(document)), "the schema accepts it"
    with pytest.raises(ImportInvalid):
        IMPORTERS[key](json.dumps(document))
