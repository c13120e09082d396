"""Import claims from the `rostrum.claims/1` format, JSON or CSV (docs/claim-format.md).

Like the case import: the whole file is checked first, every problem names its line and
field, and nothing is written unless the file is clean.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from debates.imports import (
    SLUG,
    Checker,
    ImportInvalid,
    ImportProblem,
    PosDict,
    PosList,
    csv_rows,
    looks_like_json,
    open_document,
    same_fields,
)
from debates.models import Claim, LiveSession, StudyClaim

FORMAT = "rostrum.claims/1"
CSV_COLUMNS = ["slug", "text", "truth", "domain", "side", "source_title", "source_excerpt", "source_url"]


def claims_parse(text: str, *, filename: str = "") -> list[dict]:
    claims = _parse_json(text) if looks_like_json(text, filename) else _parse_csv(text)
    _check_locked(claims)
    return claims


def _parse_json(text: str) -> list[dict]:
    doc, check = open_document(text, FORMAT, {"claims"})
    raw = check.get(doc, "claims", "claims", list) or PosList()
    claims, seen = [], set()
    for _, obj, path in check.objects(raw, "claims"):
        before = len(check.problems)
        check.unknown_keys(obj, {"slug", "text", "truth", "domain", "sources"}, path)
        claim = {
            "slug": check.slug(obj, "slug", path),
            "text": check.text(obj, "text", path, max_len=500),
            "truth": _truth(check, obj, path),
            "domain": check.text(obj, "domain", path, max_len=40),
            "_line": obj.line,
            **_sources(check, obj, path),
        }
        if claim["slug"] in seen:
            check.add(obj.key_line("slug"), f"{path}.slug", f"slug {claim['slug']!r} appears twice")
        seen.add(claim["slug"])
        if len(check.problems) == before:
            claims.append(claim)
    check.raise_if_any()
    return claims


def _truth(check: Checker, obj: PosDict, path: str) -> bool | None:
    value = obj.get("truth")
    if "truth" not in obj:
        check.add(obj.line, path, "missing field 'truth'")
    elif not isinstance(value, bool):
        check.add(obj.key_line("truth"), f"{path}.truth", "must be true or false (without quotes)")
        return None
    return value


def _sources(check: Checker, obj: PosDict, path: str) -> dict:
    raw = check.get(obj, "sources", path, dict, required=False)
    found = {"sources_true": [], "sources_false": []}
    if raw is None:
        return found
    check.unknown_keys(raw, {"true", "false"}, f"{path}.sources")
    for side in ("true", "false"):
        items = check.get(raw, side, f"{path}.sources", list, required=False) or PosList()
        for j, item in enumerate(items):
            spath = f"{path}.sources.{side}[{j}]"
            if not isinstance(item, PosDict):
                check.add(items.item_line(j), spath, 'must be an object {"title": …, "excerpt": …}')
                continue
            check.unknown_keys(item, {"title", "excerpt", "url"}, spath)
            source = {
                "title": check.text(item, "title", spath, max_len=300),
                "excerpt": check.text(item, "excerpt", spath, max_len=2000),
            }
            url = check.text(item, "url", spath, max_len=500, required=False)
            if url:
                source["url"] = url
            found[f"sources_{side}"].append(source)
    return found


def _parse_csv(text: str) -> list[dict]:
    problems: list[ImportProblem] = []
    claims: dict[str, dict] = {}
    broken: set[str] = set()  # claims whose first row was refused
    for line, row in csv_rows(text, CSV_COLUMNS, problems):
        _csv_row(line, {name: value.strip() for name, value in row.items()}, claims, broken, problems)
    if problems:
        raise ImportInvalid(problems)
    return list(claims.values())


def _csv_row(
    line: int, cells: dict, claims: dict[str, dict], broken: set[str], problems: list[ImportProblem]
) -> None:
    slug = cells["slug"]
    if not SLUG.match(slug):
        problems.append(ImportProblem(line, "slug", "use lowercase letters, digits and '-'"))
        return
    claim = claims.get(slug)
    if claim is None and slug in broken:
        # A further source of a claim whose first row was refused: its claim cells are left
        # blank as they should be (they were reported as the first row's problems, again here
        # as if it were a first row), its source is still checked.
        _csv_source(line, cells, {"sources_true": [], "sources_false": []}, problems)
        return
    if claim is None:
        claim = _csv_claim(line, cells, problems)
        if claim is None:
            broken.add(slug)
            return
        claims[slug] = claim
    else:
        for name in ("text", "truth", "domain"):
            given = cells[name]
            expected = claim["_csv"][name]
            if given and given.lower() != expected.lower():
                problems.append(
                    ImportProblem(
                        line, name, f"differs from the first row of {slug!r} (line {claim['_line']})"
                    )
                )
    _csv_source(line, cells, claim, problems)


def _csv_claim(line: int, cells: dict, problems: list[ImportProblem]) -> dict | None:
    before = len(problems)
    if not cells["text"] or len(cells["text"]) > 500:
        problems.append(ImportProblem(line, "text", "must be 1–500 characters"))
    if cells["truth"].lower() not in ("true", "false"):
        problems.append(ImportProblem(line, "truth", "must be true or false"))
    if not cells["domain"] or len(cells["domain"]) > 40:
        problems.append(ImportProblem(line, "domain", "must be 1–40 characters"))
    if len(problems) > before:
        return None
    return {
        "slug": cells["slug"],
        "text": cells["text"],
        "truth": cells["truth"].lower() == "true",
        "domain": cells["domain"],
        "sources_true": [],
        "sources_false": [],
        "_line": line,
        "_csv": {k: cells[k] for k in ("text", "truth", "domain")},
    }


def _csv_source(line: int, cells: dict, claim: dict, problems: list[ImportProblem]) -> None:
    side = cells["side"].lower()
    if not side and not (cells["source_title"] or cells["source_excerpt"]):
        return
    if side not in ("true", "false"):
        problems.append(ImportProblem(line, "side", "must be true or false"))
        return
    if not cells["source_title"] or not cells["source_excerpt"]:
        problems.append(ImportProblem(line, "source_title", "a source needs a title and an excerpt"))
        return
    if len(cells["source_excerpt"]) > 2000:
        problems.append(ImportProblem(line, "source_excerpt", "is longer than 2000 characters"))
        return
    source = {"title": cells["source_title"], "excerpt": cells["source_excerpt"]}
    if cells["source_url"]:
        source["url"] = cells["source_url"]
    claim[f"sources_{side}"].append(source)


CLAIM_FIELDS = ("text", "truth", "domain", "sources_true", "sources_false")


def _check_locked(claims: list[dict]) -> None:
    """A claim participants have judged keeps its text and truth; one a running study offers
    keeps everything (its sources too)."""
    slugs = [c["slug"] for c in claims]
    judged = set(LiveSession.objects.filter(claim__slug__in=slugs).values_list("claim__slug", flat=True))
    offered = set(
        StudyClaim.objects.filter(claim__slug__in=slugs, study__locked_at__isnull=False).values_list(
            "claim__slug", flat=True
        )
    )
    existing = {c.slug: c for c in Claim.objects.filter(slug__in=judged | offered)}
    problems = []
    for c in claims:
        old = existing.get(c["slug"])
        if old is None:
            continue
        fields = CLAIM_FIELDS if c["slug"] in offered else ("text", "truth")
        if any(getattr(old, f) != c[f] for f in fields):
            problems.append(
                ImportProblem(
                    c["_line"],
                    f"claims (slug {c['slug']!r})",
                    "participants have judged this claim, or a running study offers it, so it cannot "
                    "change; give a new version a new slug",
                )
            )
    if problems:
        raise ImportInvalid(problems)


@dataclass
class ClaimImportSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return f"claims: {self.created} new, {self.updated} updated, {self.unchanged} unchanged"


@transaction.atomic
def claims_import(*, text: str, filename: str = "") -> ClaimImportSummary:
    summary = ClaimImportSummary()
    for claim in claims_parse(text, filename=filename):
        fields = {k: claim[k] for k in CLAIM_FIELDS}
        existing = Claim.objects.filter(slug=claim["slug"]).first()
        if existing is not None and same_fields(existing, fields):
            summary.unchanged += 1  # the same file again: nothing written
            continue
        _, created = Claim.objects.update_or_create(slug=claim["slug"], defaults=fields)
        summary.created += created
        summary.updated += not created
    return summary
