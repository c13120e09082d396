"""Import cases and dialogues from the `rostrum.cases/1` JSON format (docs/case-format.md).

The whole file is validated first; any problem means nothing is written, and every problem
names its line and field path.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from debates.imports import Checker, PosDict, PosList, open_document, same_fields
from debates.models import Case, Condition, Dialogue, DialogueAssignment, StudyDialogue, Turn, count_words
from debates.models.dialogues import PAPER_CONDITIONS, paper_conditions_ensure

FORMAT = "rostrum.cases/1"
TURN_MAX = 10_000
TURNS_MIN, TURNS_MAX = 2, 20  # the paper's dialogues have six


@dataclass
class CaseImportSummary:
    cases_created: int = 0
    cases_updated: int = 0
    cases_unchanged: int = 0
    conditions_created: int = 0
    dialogues_created: int = 0
    dialogues_updated: int = 0
    dialogues_unchanged: int = 0

    def __str__(self) -> str:
        made = f"conditions: {self.conditions_created} new; " if self.conditions_created else ""
        return (
            made + f"cases: {self.cases_created} new, {self.cases_updated} updated, "
            f"{self.cases_unchanged} unchanged; dialogues: {self.dialogues_created} new, "
            f"{self.dialogues_updated} updated, {self.dialogues_unchanged} unchanged"
        )


def cases_parse(text: str) -> tuple[list[dict], list[dict], list[dict]]:
    """Validate a file; return (cases, dialogues, conditions) as plain dicts or raise
    ImportInvalid."""
    doc, check = open_document(text, FORMAT, {"cases", "dialogues", "conditions"})
    raw_conditions = check.get(doc, "conditions", "conditions", list, required=False) or PosList()
    raw_cases = check.get(doc, "cases", "cases", list, required=False) or PosList()
    raw_dialogues = check.get(doc, "dialogues", "dialogues", list, required=False) or PosList()
    conditions = _check_conditions(check, raw_conditions)
    baseline = condition_baselines() | {c["slug"]: c["baseline"] for c in conditions}
    cases = _check_cases(check, raw_cases)
    known = {c["slug"]: c for c in cases} | _existing_cases(raw_dialogues, cases)
    # Cases of this file refused above: their dialogues are not also told "no case with slug"
    # (one mistake in a case read as one more per dialogue).
    refused = {
        obj.get("slug") for obj in raw_cases if isinstance(obj, dict) and isinstance(obj.get("slug"), str)
    } - set(known)
    dialogues = _check_dialogues(check, raw_dialogues, known, baseline, refused)
    _check_locked_dialogues(check, dialogues)
    _check_locked_cases(check, cases)
    check.raise_if_any()
    return cases, dialogues, conditions


def condition_baselines() -> dict[str, bool]:
    """Every known condition's slug → whether it is a baseline (the paper's, even before their
    rows exist)."""
    paper = {slug: is_baseline for slug, _, _, is_baseline, _ in PAPER_CONDITIONS}
    return paper | {c.slug: c.baseline for c in Condition.objects.all()}


def _check_conditions(check: Checker, raw: PosList) -> list[dict]:
    """New conditions the file defines (a slug already known must match it, not redefine it)."""
    conditions, seen = [], set()
    existing = {c.slug: c for c in Condition.objects.all()}
    for _, obj, path in check.objects(raw, "conditions"):
        check.unknown_keys(obj, {"slug", "label", "description", "baseline"}, path)
        slug = check.slug(obj, "slug", path)
        condition = {
            "slug": slug,
            "label": check.text(obj, "label", path, max_len=100),
            "description": check.text(obj, "description", path, max_len=300, required=False) or "",
            "baseline": bool(check.get(obj, "baseline", path, bool, required=False)),
        }
        if slug and len(slug) > 40:
            check.add(obj.key_line("slug"), f"{path}.slug", "must be at most 40 characters")
        if slug in seen:
            check.add(obj.key_line("slug"), f"{path}.slug", f"condition {slug!r} appears twice")
        seen.add(slug)
        old = existing.get(slug)
        if old is not None and (old.label, old.baseline) != (condition["label"], condition["baseline"]):
            check.add(
                obj.line,
                path,
                f"the condition {slug!r} exists with label {old.label!r}"
                f"{' (baseline)' if old.baseline else ''}: use it as it is, or give a new slug",
            )
        conditions.append(condition)
    return conditions


def _check_cases(check: Checker, raw: PosList) -> list[dict]:
    cases, seen = [], set()
    for _, obj, path in check.objects(raw, "cases"):
        before = len(check.problems)
        check.unknown_keys(
            obj, {"slug", "title", "story", "suspects", "culprit", "rival", "evidence", "recall"}, path
        )
        case = {
            "slug": check.slug(obj, "slug", path),
            "title": check.text(obj, "title", path, max_len=200),
            "story": check.text(obj, "story", path, max_len=100_000),
            "culprit": check.text(obj, "culprit", path, max_len=120),
            "rival": check.text(obj, "rival", path, max_len=120),
            "suspects": _check_suspects(check, obj, path),
            "evidence": _check_evidence(check, obj, path),
            "recall": _check_recall(check, obj, path),
            "_line": obj.line,
        }
        if case["slug"] in seen:
            check.add(obj.key_line("slug"), f"{path}.slug", f"slug {case['slug']!r} appears twice")
        seen.add(case["slug"])
        names = {s["name"] for s in case["suspects"] or []}
        for role in ("culprit", "rival"):
            if case[role] and case["suspects"] is not None and case[role] not in names:
                check.add(obj.key_line(role), f"{path}.{role}", f"{case[role]!r} is not one of the suspects")
        if case["culprit"] and case["culprit"] == case["rival"]:
            check.add(obj.key_line("rival"), f"{path}.rival", "the rival must differ from the culprit")
        if len(check.problems) == before:
            cases.append(case)
    return cases


def _check_suspects(check: Checker, obj: PosDict, path: str) -> list[dict] | None:
    raw = check.get(obj, "suspects", path, list)
    if raw is None:
        return None
    if len(raw) < 2:
        check.add(obj.key_line("suspects"), f"{path}.suspects", "give at least two suspects")
    suspects, names = [], set()
    for j, item in enumerate(raw):
        spath = f"{path}.suspects[{j}]"
        if not isinstance(item, PosDict):
            check.add(raw.item_line(j), spath, 'must be an object {"name": …, "description": …}')
            continue
        check.unknown_keys(item, {"name", "description"}, spath)
        name = check.text(item, "name", spath, max_len=120)
        description = check.text(item, "description", spath, max_len=500, required=False) or ""
        if name in names:
            check.add(item.key_line("name"), f"{spath}.name", f"suspect {name!r} appears twice")
        names.add(name)
        suspects.append({"name": name, "description": description})
    return suspects


def _check_evidence(check: Checker, obj: PosDict, path: str) -> list[dict]:
    raw = check.get(obj, "evidence", path, list)
    units, numbers = [], set()
    for j, item in enumerate(raw or []):
        epath = f"{path}.evidence[{j}]"
        if not isinstance(item, PosDict):
            check.add(raw.item_line(j), epath, 'must be an object {"number": …, "text": …}')
            continue
        check.unknown_keys(item, {"number", "text"}, epath)
        number = check.get(item, "number", epath, int)
        text = check.text(item, "text", epath, max_len=2000)
        if number is not None and number < 1:
            check.add(item.key_line("number"), f"{epath}.number", "must be 1 or more")
        if number in numbers:
            check.add(item.key_line("number"), f"{epath}.number", f"number {number} appears twice")
        numbers.add(number)
        units.append({"number": number, "text": text})
    return units


def _check_recall(check: Checker, obj: PosDict, path: str) -> dict:
    raw = check.get(obj, "recall", path, dict, required=False)
    if raw is None:
        return {}
    rpath = f"{path}.recall"
    check.unknown_keys(raw, {"question", "options", "answer"}, rpath)
    question = check.text(raw, "question", rpath, max_len=300)
    options = check.get(raw, "options", rpath, list)
    answer = check.text(raw, "answer", rpath, max_len=200)
    if options is None:
        return {}
    if not 2 <= len(options) <= 8 or not all(isinstance(o, str) and o.strip() for o in options):
        check.add(raw.key_line("options"), f"{rpath}.options", "give 2 to 8 non-empty strings")
    elif len(set(options)) != len(options):
        check.add(raw.key_line("options"), f"{rpath}.options", "options must differ from each other")
    elif answer is not None and answer not in options:
        check.add(raw.key_line("answer"), f"{rpath}.answer", "must be one of the options, exactly")
    return {"question": question, "options": options, "answer": answer}


def _existing_cases(raw_dialogues: PosList, cases: list[dict]) -> dict:
    wanted = {d.get("case") for d in raw_dialogues if isinstance(d, dict)} - {c["slug"] for c in cases}
    found = Case.objects.filter(slug__in=[w for w in wanted if isinstance(w, str)])
    return {c.slug: {"slug": c.slug} for c in found}


def _check_dialogues(
    check: Checker,
    raw: PosList,
    known_cases: dict,
    baseline: dict[str, bool],
    refused_cases: set = frozenset(),
) -> list[dict]:
    dialogues, seen = [], set()
    allowed = {"slug", "case", "condition", "active_side", "variant", "side_a", "turns"}
    for _, obj, path in check.objects(raw, "dialogues"):
        before = len(check.problems)
        check.unknown_keys(obj, allowed, path)
        d = {
            "slug": check.slug(obj, "slug", path),
            "case": check.text(obj, "case", path, max_len=80),
            "condition": check.text(obj, "condition", path, max_len=40),
            "active_side": check.text(obj, "active_side", path, max_len=10),
            "variant": check.get(obj, "variant", path, str),
            "side_a": check.text(obj, "side_a", path, max_len=10),
            "turns": _check_turns(check, obj, path),
            "_line": obj.line,
        }
        if d["slug"] in seen:
            check.add(obj.key_line("slug"), f"{path}.slug", f"slug {d['slug']!r} appears twice")
        seen.add(d["slug"])
        # A case of this file refused above is said there, not once more per dialogue.
        if d["case"] and d["case"] not in known_cases and d["case"] not in refused_cases:
            check.add(obj.key_line("case"), f"{path}.case", f"no case with slug {d['case']!r}")
        _check_condition(check, obj, path, d, baseline)
        if len(check.problems) == before:
            dialogues.append(d)
    return dialogues


def design_problems(
    *, condition: str | None, active_side: str | None, variant: str | None, side_a: str | None, baseline: dict
) -> list[tuple[str, str]]:
    """A dialogue's design as the format allows it, as (field, problem) pairs: a known condition
    (`baseline` maps every known condition's slug to whether it is a baseline), side A's role, and
    for a baseline no active side and no variant, else an active side and a short variant. The
    importer and the dialogue admin both ask this."""
    problems = []
    if condition and condition not in baseline:
        problems.append(
            (
                "condition",
                f"no condition {condition!r}: use one of {', '.join(sorted(baseline))}, or define it "
                'under "conditions" in the file',
            )
        )
    if side_a and side_a not in ("culprit", "rival"):
        problems.append(("side_a", 'must be "culprit" or "rival"'))
    if baseline.get(condition):
        if active_side and active_side != "none":
            problems.append(("active_side", 'must be "none" for a baseline dialogue'))
        if variant:
            problems.append(("variant", 'must be "" for a baseline dialogue'))
    elif condition in baseline:
        if active_side and active_side not in ("culprit", "rival"):
            problems.append(("active_side", 'must be "culprit" or "rival"'))
        if variant is not None and len(variant) > 4:
            problems.append(("variant", 'at most 4 characters (e.g. "V1")'))
    return problems


def turn_count_problem(count: int) -> str | None:
    """Too few or too many turns for the format (TURNS_MIN to TURNS_MAX)."""
    if TURNS_MIN <= count <= TURNS_MAX:
        return None
    return f"must have {TURNS_MIN} to {TURNS_MAX} turns (the paper's have 6), has {count}"


def speaker_problem(index: int, speaker: str | None) -> str | None:
    """The speaker of the turn at `index` (from 0): sides alternate A, B, A, B, …"""
    expected = "A" if index % 2 == 0 else "B"
    if speaker is None or speaker == expected:
        return None
    return f'must be "{expected}" (turns alternate A, B, A, B, …)'


def _check_condition(check: Checker, obj: PosDict, path: str, d: dict, baseline: dict[str, bool]) -> None:
    found = design_problems(
        condition=d["condition"],
        active_side=d["active_side"],
        variant=d["variant"],
        side_a=d["side_a"],
        baseline=baseline,
    )
    for field, problem in found:
        check.add(obj.key_line(field), f"{path}.{field}", problem)


def _check_turns(check: Checker, obj: PosDict, path: str) -> list[dict] | None:
    raw = check.get(obj, "turns", path, list)
    if raw is None:
        return None
    count = turn_count_problem(len(raw))
    if count:
        check.add(obj.key_line("turns"), f"{path}.turns", count)
    turns = []
    for j, item in enumerate(raw):
        tpath = f"{path}.turns[{j}]"
        if not isinstance(item, PosDict):
            check.add(raw.item_line(j), tpath, 'must be an object {"speaker": …, "text": …}')
            continue
        check.unknown_keys(item, {"speaker", "text"}, tpath)
        speaker = check.text(item, "speaker", tpath, max_len=1)
        alternate = speaker_problem(j, speaker)
        if alternate:
            check.add(item.key_line("speaker"), f"{tpath}.speaker", alternate)
        text = check.text(item, "text", tpath, max_len=TURN_MAX)
        turns.append({"speaker": speaker, "text": text})
    return turns


def _check_locked_dialogues(check: Checker, dialogues: list[dict]) -> None:
    """A dialogue that participants have read, or that a study with real participants offers,
    must keep its text and design. The same rule as the admin's (`dialogue_studies`): other
    dialogues of a case in use stay free to change, so a new version can sit beside the
    original (the case itself is checked by `_check_locked_cases`)."""
    slugs = [d["slug"] for d in dialogues]
    assigned = set(
        DialogueAssignment.objects.filter(dialogue__slug__in=slugs).values_list("dialogue__slug", flat=True)
    )
    offered = StudyDialogue.objects.filter(study__locked_at__isnull=False, dialogue__slug__in=slugs)
    assigned |= set(offered.values_list("dialogue__slug", flat=True))
    existing = {
        d.slug: d
        for d in Dialogue.objects.filter(slug__in=assigned).select_related("case").prefetch_related("turns")
    }
    for d in dialogues:
        old = existing.get(d["slug"])
        if old is None:
            continue
        same = (
            old.case.slug == d["case"]
            and [(t.speaker, t.text) for t in old.turns.all()]
            == [(t["speaker"], t["text"]) for t in d["turns"]]
            and (old.condition, old.active_side, old.variant, old.side_a)
            == (d["condition"], d["active_side"], d["variant"], d["side_a"])
        )
        if not same:
            check.add(
                d["_line"],
                f"dialogues (slug {d['slug']!r})",
                "participants have already read this dialogue, or a running study offers it, so it "
                "cannot change; give the new version a new slug",
            )


def _in_use() -> Q:
    """Cases a study with real participants offers a dialogue of."""
    offered = StudyDialogue.objects.filter(study__locked_at__isnull=False).values("dialogue__case")
    return Q(pk__in=offered)


CASE_FIELDS = ("title", "story", "suspects", "culprit", "rival", "evidence", "recall")


def _check_locked_cases(check: Checker, cases: list[dict]) -> None:
    """A case a running study uses keeps its story, suspects, culprit and rival."""
    used = {c.slug: c for c in Case.objects.filter(_in_use(), slug__in=[c["slug"] for c in cases]).distinct()}
    for c in cases:
        old = used.get(c["slug"])
        if old is not None and any(getattr(old, f) != c[f] for f in CASE_FIELDS):
            check.add(
                c["_line"],
                f"cases (slug {c['slug']!r})",
                "a study participants have taken uses this case, so it cannot change; "
                "give the new version a new slug",
            )


@transaction.atomic
def cases_import(*, text: str) -> CaseImportSummary:
    cases, dialogues, conditions = cases_parse(text)
    summary = CaseImportSummary()
    paper_conditions_ensure()
    for c in conditions:
        _, created = Condition.objects.get_or_create(
            slug=c["slug"], defaults={k: c[k] for k in ("label", "description", "baseline")}
        )
        summary.conditions_created += created
    for c in cases:
        fields = {k: c[k] for k in CASE_FIELDS}
        existing = Case.objects.filter(slug=c["slug"]).first()
        if existing is not None and same_fields(existing, fields):
            summary.cases_unchanged += 1  # a file imported again: nothing written, nothing said changed
            continue
        _, created = Case.objects.update_or_create(slug=c["slug"], defaults=fields)
        summary.cases_created += created
        summary.cases_updated += not created
    case_ids = dict(Case.objects.filter(slug__in={d["case"] for d in dialogues}).values_list("slug", "id"))
    for d in dialogues:
        fields = {
            "case_id": case_ids[d["case"]],
            "condition": d["condition"],
            "active_side": d["active_side"],
            "variant": d["variant"],
            "side_a": d["side_a"],
            "words": sum(count_words(t["text"]) for t in d["turns"]),
        }
        existing = Dialogue.objects.filter(slug=d["slug"]).first()
        turns = [(t["speaker"], t["text"]) for t in d["turns"]]
        if (
            existing is not None
            and same_fields(existing, fields)
            and list(existing.turns.order_by("number").values_list("speaker", "text")) == turns
        ):
            summary.dialogues_unchanged += 1
            continue
        dialogue, created = Dialogue.objects.update_or_create(slug=d["slug"], defaults=fields)
        dialogue.turns.all().delete()
        Turn.objects.bulk_create(
            Turn(dialogue=dialogue, number=n, speaker=t["speaker"], text=t["text"])
            for n, t in enumerate(d["turns"], start=1)
        )
        summary.dialogues_created += created
        summary.dialogues_updated += not created
    return summary
