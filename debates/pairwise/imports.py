"""Design D's file formats: instance sets in and out as JSON (`rostrum.instances/1`: the set,
its excerpts, and optionally its instances — without them the sampler builds them from the
seed) and CSV (one row per instance, excerpts inline). Problems name their line; a bad file
writes nothing (docs/instance-format.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from django.db import transaction

from common.downloads import csv_line
from debates.imports import (
    SLUG,
    Checker,
    ImportInvalid,
    ImportProblem,
    PosDict,
    PosList,
    csv_rows,
    integer_problem,
    looks_like_json,
    open_document,
)
from debates.models import Comparison, Excerpt, Instance, InstanceSet
from debates.pairwise.sampler import ExcerptSpec, instance_set_build
from debates.pairwise.services import instance_set_studies

FORMAT = "rostrum.instances/1"
SET_FIELDS = {"slug", "title", "seed", "excerpt_turns", "per_pair", "annotations_per_instance", "topic_label"}
EXCERPT_FIELDS = ["key", "debate", "topic", "speaker_a", "speaker_b", "stance", "turns"]
CSV_COLUMNS = ["number", "stance"] + [f"excerpt_{n}_{f}" for n in (1, 2) for f in EXCERPT_FIELDS]


# --- Export ------------------------------------------------------------------------------


def set_json_lines(instance_set: InstanceSet) -> Iterator[str]:
    """The set as a `rostrum.instances/1` document, produced piece by piece: one excerpt or
    instance per line."""

    def dumps(value) -> str:
        return json.dumps(value, ensure_ascii=False)

    meta = {f: getattr(instance_set, f) for f in sorted(SET_FIELDS)}
    yield f'{{"format": {dumps(FORMAT)},\n "set": {dumps(meta)},\n "excerpts": [\n'
    separator = ""
    for e in instance_set.excerpts.order_by("key").iterator(chunk_size=500):
        yield separator + "  " + dumps({f: getattr(e, f) for f in EXCERPT_FIELDS})
        separator = ",\n"
    yield '\n ],\n "instances": [\n'
    separator = ""
    instances = instance_set.instances.select_related("excerpt_1", "excerpt_2").order_by("number")
    for i in instances.iterator(chunk_size=500):
        yield (
            separator
            + "  "
            + dumps({"number": i.number, "excerpt_1": i.excerpt_1.key, "excerpt_2": i.excerpt_2.key})
        )
        separator = ",\n"
    yield "\n ]}\n"


def set_json(instance_set: InstanceSet) -> str:
    return "".join(set_json_lines(instance_set))


def turns_cell(turns: list[dict]) -> str:
    return "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)


def set_csv_lines(instance_set: InstanceSet) -> Iterator[str]:
    """The set as CSV, with every export's guard against spreadsheet formulas (its text comes
    from an imported file: a topic or an interlocutor may start with "=")."""
    yield csv_line(CSV_COLUMNS, guard=False)
    for i in instance_set.instances.select_related("excerpt_1", "excerpt_2").order_by("number"):
        row = [i.number, i.stance]
        for e in (i.excerpt_1, i.excerpt_2):
            row += [e.key, e.debate, e.topic, e.speaker_a, e.speaker_b, e.stance, turns_cell(e.turns)]
        yield csv_line(row)


# --- Import ------------------------------------------------------------------------------


def _check_turns(check: Checker, obj: PosDict, path: str) -> tuple | None:
    raw = check.get(obj, "turns", path, list)
    if raw is None:
        return None
    turns = []
    for j, item in enumerate(raw):
        tpath = f"{path}.turns[{j}]"
        if not isinstance(item, PosDict):
            check.add(raw.item_line(j), tpath, 'must be an object {"speaker": "A" or "B", "text": …}')
            continue
        speaker = check.text(item, "speaker", tpath, max_len=1)
        if speaker is not None and speaker not in ("A", "B"):
            check.add(item.key_line("speaker"), f"{tpath}.speaker", 'must be "A" or "B"')
        turns.append({"speaker": speaker, "text": check.text(item, "text", tpath, max_len=10_000)})
    if not turns:
        check.add(obj.key_line("turns"), f"{path}.turns", "give at least one turn")
    return tuple(turns)


def _parse_json(text: str) -> tuple[dict, list[ExcerptSpec], list[tuple[int, str, str]] | None]:
    doc, check = open_document(text, FORMAT, {"set", "excerpts", "instances"})
    meta = check.get(doc, "set", "set", dict) or PosDict()
    check.unknown_keys(meta, SET_FIELDS, "set")
    values = {"slug": check.slug(meta, "slug", "set"), "title": check.text(meta, "title", "set", max_len=200)}
    for name in ("seed", "excerpt_turns", "per_pair", "annotations_per_instance"):
        field = InstanceSet._meta.get_field(name)
        value = check.integer(meta, name, "set", field=field, minimum=1, required=False)
        if value is not None:
            values[name] = value
    if "topic_label" in meta:
        values["topic_label"] = check.text(meta, "topic_label", "set", max_len=200, required=False) or ""
    excerpts, keys = [], set()
    raw = check.get(doc, "excerpts", "excerpts", list) or PosList()
    for _, obj, path in check.objects(raw, "excerpts"):
        check.unknown_keys(obj, set(EXCERPT_FIELDS), path)
        fields = {
            f: check.text(obj, f, path, max_len=300, required=f not in ("topic", "speaker_b"))
            for f in EXCERPT_FIELDS[:-1]
        }
        turns = _check_turns(check, obj, path)
        if fields["key"] in keys:
            check.add(obj.key_line("key"), f"{path}.key", f"key {fields['key']!r} appears twice")
        keys.add(fields["key"])
        if all(fields[f] is not None for f in ("key", "debate", "speaker_a", "stance")) and turns:
            excerpts.append(ExcerptSpec(turns=turns, **{f: fields[f] or "" for f in EXCERPT_FIELDS[:-1]}))
    instances = None
    if "instances" in doc:
        instances = []
        raw = check.get(doc, "instances", "instances", list) or PosList()
        for _, obj, path in check.objects(raw, "instances"):
            number = check.integer(obj, "number", path, field=Instance._meta.get_field("number"))
            first = check.text(obj, "excerpt_1", path, max_len=200)
            second = check.text(obj, "excerpt_2", path, max_len=200)
            for name, key in (("excerpt_1", first), ("excerpt_2", second)):
                if key is not None and key not in keys:
                    check.add(obj.key_line(name), f"{path}.{name}", f"no excerpt with key {key!r}")
            instances.append((number, first, second, obj.line, path))
        _check_pairs(check, instances, {e.key: e for e in excerpts})
    check.raise_if_any()
    return values, excerpts, [(n, a, b) for n, a, b, _, _ in instances] if instances is not None else None


# A pair compares two interlocutors (paper 003: 6 instances for every pair of them); one
# against itself counted its own wins and losses (a win-matrix diagonal, an inflated record).
SELF_PAIR = "both excerpts' Speaker A is {name!r}: a pair compares two different interlocutors"


def _check_pairs(check: Checker, instances: list, by_key: dict) -> None:
    numbers = set()
    for number, first, second, line, path in instances:
        if number is not None and number in numbers:
            check.add(line, f"{path}.number", f"number {number} appears twice")
        numbers.add(number)
        a, b = by_key.get(first), by_key.get(second)
        if a and b and a.debate == b.debate:
            check.add(line, path, "the two excerpts come from the same debate")
        if a and b and a.stance != b.stance:
            check.add(line, path, f"Speaker A's stances differ ({a.stance!r} and {b.stance!r})")
        if a and b and a.speaker_a == b.speaker_a:
            check.add(line, path, SELF_PAIR.format(name=a.speaker_a))


def _parse_csv(text: str) -> tuple[list[ExcerptSpec], list[tuple[int, str, str]]]:
    problems: list[ImportProblem] = []
    excerpts: dict[str, ExcerptSpec] = {}
    instances, numbers = [], set()
    for line, cells in csv_rows(text, CSV_COLUMNS, problems, our_export=True):
        problem = _number_problem(cells["number"], numbers)
        if problem:
            problems.append(ImportProblem(line, "number", problem))
            continue
        number = int(cells["number"])
        numbers.add(number)
        keys = []
        for n in (1, 2):
            spec = _csv_excerpt(line, n, cells, problems)
            if spec is not None:
                excerpts.setdefault(spec.key, spec)
                keys.append(spec.key)
        if len(keys) == 2:
            a, b = excerpts[keys[0]], excerpts[keys[1]]
            if a.debate == b.debate or a.stance != b.stance:
                problems.append(
                    ImportProblem(line, "", "the excerpts must come from different debates, same stance")
                )
            elif a.speaker_a == b.speaker_a:
                problems.append(ImportProblem(line, "", SELF_PAIR.format(name=a.speaker_a)))
            instances.append((number, keys[0], keys[1]))
    if problems:
        raise ImportInvalid(problems)
    return list(excerpts.values()), instances


def _number_problem(cell: str, numbers: set[int]) -> str | None:
    """Why a CSV cell is not a new instance number: it must be ASCII digits (`str.isdigit`
    also takes "²", which `int` refuses), within the field's range (past it PostgreSQL wraps
    the number), and not one of `numbers`, those of the rows before."""
    if not re.fullmatch("[0-9]{1,19}", cell):
        return "must be a whole number"
    number = int(cell)
    problem = integer_problem(number, Instance._meta.get_field("number"))
    return problem or (f"number {number} appears twice" if number in numbers else None)


def _csv_excerpt(line: int, n: int, cells: dict, problems: list) -> ExcerptSpec | None:
    prefix = f"excerpt_{n}_"
    values = {f: cells[prefix + f].strip() for f in EXCERPT_FIELDS}
    for f in ("key", "debate", "speaker_a", "stance", "turns"):
        if not values[f]:
            problems.append(ImportProblem(line, prefix + f, "must not be empty"))
            return None
    turns = []
    for part in values["turns"].splitlines():
        speaker, sep, text = part.partition(":")
        if not sep or speaker.strip() not in ("A", "B"):
            if turns:  # a line break inside a turn's text
                turns[-1]["text"] += "\n" + part
                continue
            problems.append(
                ImportProblem(line, prefix + "turns", "write each turn as 'A: text' or 'B: text'")
            )
            return None
        turns.append({"speaker": speaker.strip(), "text": text.strip()})
    return ExcerptSpec(turns=tuple(turns), **{f: values[f] for f in EXCERPT_FIELDS[:-1]})


@transaction.atomic
def set_import(*, text: str, filename: str = "", into: InstanceSet | None = None) -> InstanceSet:
    """A JSON file creates (or replaces, if unused) the set it describes; a CSV file fills
    the set given as `into`."""
    if not looks_like_json(text, filename):
        if into is None:
            raise ImportInvalid(
                [
                    ImportProblem(
                        1,
                        "",
                        "choose the instance set a CSV file goes into (a CSV file holds instances "
                        "only: create the empty set first, Instance sets → Add)",
                    )
                ]
            )
        excerpts, instances = _parse_csv(text)
        return _store(into, excerpts, instances)
    values, excerpts, instances = _parse_json(text)
    if not SLUG.match(values["slug"]):
        raise ImportInvalid([ImportProblem(1, "set.slug", "use lowercase letters, digits and '-'")])
    pool, _ = InstanceSet.objects.update_or_create(slug=values["slug"], defaults={**values, "source": "file"})
    if instances is None:
        _ensure_unused(pool)
        instance_set_build(instance_set=pool, excerpts=excerpts)
        return pool
    return _store(pool, excerpts, instances)


def _ensure_unused(pool: InstanceSet) -> None:
    if instance_set_studies(pool).exists():
        raise ImportInvalid(
            [
                ImportProblem(
                    1,
                    "set",
                    f"a study that has gone live uses {pool.slug!r}: import as a new set",
                )
            ]
        )
    if Comparison.objects.filter(instance__instance_set=pool).exists():
        raise ImportInvalid(
            [ImportProblem(1, "set", f"annotators have used {pool.slug!r}: import as a new set")]
        )


def _store(
    pool: InstanceSet, excerpts: list[ExcerptSpec], instances: list[tuple[int, str, str]]
) -> InstanceSet:
    _ensure_unused(pool)
    Instance.objects.filter(instance_set=pool).delete()
    Excerpt.objects.filter(instance_set=pool).delete()
    stored = {
        e.key: Excerpt.objects.create(
            instance_set=pool,
            key=e.key,
            debate=e.debate,
            topic=e.topic,
            speaker_a=e.speaker_a,
            speaker_b=e.speaker_b,
            stance=e.stance,
            turns=list(e.turns),
        )
        for e in excerpts
    }
    Instance.objects.bulk_create(
        Instance(
            instance_set=pool,
            number=number,
            excerpt_1=stored[a],
            excerpt_2=stored[b],
            stance=stored[a].stance,
            interlocutor_1=stored[a].speaker_a,
            interlocutor_2=stored[b].speaker_a,
        )
        for number, a, b in instances
    )
    return pool
