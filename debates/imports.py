"""The import toolkit shared by every design's file formats: problems that name their line
and field, a JSON parser that remembers lines, checks of a document's fields, opening a
JSON or CSV document, and the management command that imports a file.

The whole file is validated before anything is written; any problem means nothing is
written, and every problem names its line (and, for JSON, its field path).

`loads(text)` returns ordinary Python values, except that objects are `PosDict` and arrays
are `PosList`, which carry `.line` (where they open) and, for each key or item, the line it
starts on (`key_line(key)`, `item_line(index)`). Errors raise `JSONPosError` with a line.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.core.management.base import BaseCommand, CommandError
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import Field

from common.downloads import unguarded

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,78}[a-z0-9])?$")
# Control characters other than tab, line feed and carriage return: PostgreSQL refuses NUL
# in text (an error on writing, after the file was found clean), and none of the others
# belongs in a dialogue, claim or excerpt. DEL and the C1 block (U+0080-U+009F) too: a C1
# character in UTF-8 text is nearly always Windows-1252 punctuation decoded as Latin-1 on
# the way (a curly apostrophe become U+0092), which participants would see as a box.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Where a JSON string's plain run of characters ends: its closing quote, an escape, or a
# character a string may not hold as it is.
_STRING_STOP = re.compile(r'["\\\x00-\x1f\x7f-\x9f]')


def control_message(char: str) -> str:
    message = f"a control character (U+{ord(char):04X}) is not allowed in text"
    if "\x80" <= char <= "\x9f":
        message += " (was the file Windows-1252 text converted to UTF-8 as Latin-1?)"
    return message


# --- Problems ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportProblem:
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}, {self.path}" if self.path else f"line {self.line}"
        return f"{where}: {self.message}"


class ImportInvalid(Exception):
    def __init__(self, problems: list[ImportProblem]) -> None:
        super().__init__(f"{len(problems)} problem(s) in the file; nothing was imported")
        self.problems = problems


# --- JSON with line numbers --------------------------------------------------------------

# ASCII digits only: `\d` also matches other scripts' digits, which JSON does not allow.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# No field takes a whole number of more digits (a bigint has 19), and Python refuses to read
# one of more than 4300 (a ValueError, not a problem with a line).
_MAX_DIGITS = 19
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_MAX_DEPTH = 200


class JSONPosError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class PosDict(dict):
    line = 1
    key_lines: dict

    def key_line(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class PosList(list):
    line = 1
    item_lines: list

    def item_line(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.depth = 0
        # Offsets of line starts, for turning an offset into a line number.
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(self, offset: int) -> int:
        lo, hi = 0, len(self.newlines)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.newlines[mid] < offset:
                lo = mid + 1
            else:
                hi = mid
        return lo + 1

    def fail(self, message: str, offset: int | None = None) -> JSONPosError:
        return JSONPosError(self.line_at(self.i if offset is None else offset), message)

    def skip_space(self) -> None:
        text, i = self.text, self.i
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        self.i = i

    def parse(self):
        self.skip_space()
        value = self.value()
        self.skip_space()
        if self.i != len(self.text):
            raise self.fail("unexpected text after the end of the JSON document")
        return value

    def value(self):
        if self.i >= len(self.text):
            raise self.fail("unexpected end of file")
        ch = self.text[self.i]
        if ch == "{":
            return self.object()
        if ch == "[":
            return self.array()
        if ch == '"':
            return self.string()
        for word, result in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.i):
                self.i += len(word)
                return result
        match = _NUMBER.match(self.text, self.i)
        if match:
            raw = match.group()
            if any(c in raw for c in ".eE"):
                self.i = match.end()
                return float(raw)
            if len(raw.lstrip("-")) > _MAX_DIGITS:
                raise self.fail(f"number out of range (more than {_MAX_DIGITS} digits)")
            self.i = match.end()
            return int(raw)
        raise self.fail(f"unexpected character {ch!r}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.fail("nesting is too deep")

    def object(self) -> PosDict:
        self.enter()
        result = PosDict()
        result.line, result.key_lines = self.line_at(self.i), {}
        self.i += 1
        self.skip_space()
        if self.text.startswith("}", self.i):
            self.i += 1
            self.depth -= 1
            return result
        while True:
            self.skip_space()
            if not self.text.startswith('"', self.i):
                raise self.fail("expected a quoted key")
            key_offset = self.i
            key = self.string()
            if key in result:
                raise self.fail(f"duplicate key {key!r}", key_offset)
            self.skip_space()
            if not self.text.startswith(":", self.i):
                raise self.fail(f"expected ':' after key {key!r}")
            self.i += 1
            self.skip_space()
            result.key_lines[key] = self.line_at(key_offset)
            result[key] = self.value()
            value_end = self.i
            self.skip_space()
            if self.text.startswith(",", self.i):
                self.i += 1
                continue
            if self.text.startswith("}", self.i):
                self.i += 1
                self.depth -= 1
                return result
            # Report where the comma is missing: the end of the previous value.
            raise self.fail("expected ',' or '}' (is a comma missing?)", value_end)

    def array(self) -> PosList:
        self.enter()
        result = PosList()
        result.line, result.item_lines = self.line_at(self.i), []
        self.i += 1
        self.skip_space()
        if self.text.startswith("]", self.i):
            self.i += 1
            self.depth -= 1
            return result
        while True:
            self.skip_space()
            result.item_lines.append(self.line_at(self.i))
            result.append(self.value())
            value_end = self.i
            self.skip_space()
            if self.text.startswith(",", self.i):
                self.i += 1
                continue
            if self.text.startswith("]", self.i):
                self.i += 1
                self.depth -= 1
                return result
            raise self.fail("expected ',' or ']' (is a comma missing?)", value_end)

    def string(self) -> str:
        start = self.i
        self.i += 1
        parts: list[str] = []
        text = self.text
        while True:
            stop = _STRING_STOP.search(text, self.i)
            end = stop.start() if stop else len(text)
            parts.append(text[self.i : end])
            if end >= len(text):
                raise self.fail("unterminated string", start)
            ch = text[end]
            if ch == '"':
                self.i = end + 1
                return "".join(parts)
            if ch < " ":
                raise self.fail("control character in a string (use \\n for a line break)", end)
            if ch != "\\":
                raise self.fail(control_message(ch), end)
            self.i = end + 1
            parts.append(self.escape())

    def escape(self) -> str:
        """The character of the escape after a backslash. Escapes of characters text cannot
        hold are refused here, where their line is known: a control character (`CONTROL`), or
        half of a surrogate pair without its other half (it cannot be written as UTF-8)."""
        if self.i >= len(self.text):
            raise self.fail("unterminated string")
        start, ch = self.i - 1, self.text[self.i]
        if ch in _ESCAPES:
            self.i += 1
            return self.allowed(_ESCAPES[ch], start)
        if ch == "u":
            code = self.hex4(self.i + 1)
            self.i += 5
            if 0xD800 <= code < 0xDC00 and self.text.startswith("\\u", self.i):
                low = self.hex4(self.i + 2)
                if 0xDC00 <= low < 0xE000:
                    self.i += 6
                    return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
            if 0xD800 <= code < 0xE000:
                raise self.fail(f"\\u{code:04x} is half of a surrogate pair, without its other half", start)
            return self.allowed(chr(code), start)
        raise self.fail(f"bad escape \\{ch}")

    def allowed(self, char: str, start: int) -> str:
        if CONTROL.match(char):
            raise self.fail(control_message(char), start)
        return char

    def hex4(self, at: int) -> int:
        digits = self.text[at : at + 4]
        if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise self.fail("bad \\u escape", at)
        return int(digits, 16)


def loads(text: str):
    if text.startswith("\ufeff"):
        text = text[1:]
    return _Parser(text).parse()


# --- Checking a JSON document ------------------------------------------------------------


def integer_problem(value: int, field: Field, *, minimum: int | None = None) -> str | None:
    """Why `value` cannot go into the integer model `field`, or None. The bounds are the
    field's own on every database (PostgreSQL's smallint, integer, bigint), not the
    connection's: SQLite would take more, and PostgreSQL silently wraps a number past them
    (4294967301 stored as 5), so a file must be refused the same everywhere."""
    low, high = BaseDatabaseOperations.integer_field_ranges[field.get_internal_type()]
    low = low if minimum is None else max(low, minimum)
    if low <= value <= high:
        return None
    return f"must be a whole number from {low} to {high}"


@dataclass
class Checker:
    """Collects the problems of one document while its fields are read."""

    problems: list[ImportProblem] = field(default_factory=list)

    def add(self, line: int, path: str, message: str) -> None:
        self.problems.append(ImportProblem(line, path, message))

    def get(self, obj: PosDict, key: str, path: str, kind: type, *, required: bool = True):
        """Fetch obj[key], checking its type; report and return None when wrong."""
        if key not in obj:
            if required:
                self.add(obj.line, path, f"missing field {key!r}")
            return None
        value = obj[key]
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if not ok:
            names = {str: "a string", int: "a whole number", list: "a list", dict: "an object"}
            self.add(obj.key_line(key), f"{path}.{key}", f"must be {names.get(kind, kind.__name__)}")
            return None
        return value

    def integer(
        self,
        obj: PosDict,
        key: str,
        path: str,
        *,
        field: Field,
        minimum: int | None = None,
        required: bool = True,
    ) -> int | None:
        """A whole number that `field` can store (`integer_problem`), at least `minimum`."""
        value = self.get(obj, key, path, int, required=required)
        problem = None if value is None else integer_problem(value, field, minimum=minimum)
        if problem:
            self.add(obj.key_line(key), f"{path}.{key}", problem)
            return None
        return value

    def text(self, obj: PosDict, key: str, path: str, *, max_len: int, required: bool = True) -> str | None:
        value = self.get(obj, key, path, str, required=required)
        if value is None:
            return None
        if required and not value.strip():
            self.add(obj.key_line(key), f"{path}.{key}", "must not be empty")
            return None
        if len(value) > max_len:
            self.add(obj.key_line(key), f"{path}.{key}", f"is longer than {max_len} characters")
            return None
        return value

    def slug(self, obj: PosDict, key: str, path: str) -> str | None:
        value = self.text(obj, key, path, max_len=80)
        if value is not None and not SLUG.match(value):
            self.add(obj.key_line(key), f"{path}.{key}", "use lowercase letters, digits and '-'")
            return None
        return value

    def unknown_keys(self, obj: PosDict, allowed: set[str], path: str) -> None:
        for key in obj:
            if key not in allowed:
                self.add(obj.key_line(key), f"{path}.{key}", "unknown field")

    def objects(self, raw: PosList, path: str) -> Iterator[tuple[int, PosDict, str]]:
        """The items of a list that must hold objects, as (index, object, path); any other
        item is reported and skipped."""
        for i, obj in enumerate(raw):
            item_path = f"{path}[{i}]"
            if isinstance(obj, PosDict):
                yield i, obj, item_path
            else:
                self.add(raw.item_line(i), item_path, "must be an object")

    def raise_if_any(self) -> None:
        if self.problems:
            raise ImportInvalid(sorted(self.problems, key=lambda p: p.line))


# --- Opening a document ------------------------------------------------------------------


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ImportInvalid([ImportProblem(line, "", "the file is not valid UTF-8 text")]) from None


def looks_like_json(text: str, filename: str = "") -> bool:
    """A .json file, or (whatever its name) text that opens with an object."""
    name = filename.lower()
    return name.endswith(".json") or (not name.endswith(".csv") and text.lstrip().startswith("{"))


def open_document(text: str, format_name: str, keys: set[str]) -> tuple[PosDict, Checker]:
    """Parse a JSON import file: one object whose "format" is `format_name` and whose other
    keys are among `keys`. Unreadable JSON raises ImportInvalid at once; the returned
    checker collects the file's other problems."""
    try:
        doc = loads(text)
    except JSONPosError as error:
        raise ImportInvalid([ImportProblem(error.line, "", f"not valid JSON: {error.message}")]) from None
    if not isinstance(doc, PosDict):
        raise ImportInvalid([ImportProblem(1, "", "the file must hold one JSON object")])
    check = Checker()
    if doc.get("format") != format_name:
        check.add(doc.key_line("format"), "format", f'must be "{format_name}"')
    check.unknown_keys(doc, {"format", *keys}, "")
    return doc, check


def csv_rows(
    text: str, columns: list[str], problems: list[ImportProblem], *, our_export: bool = False
) -> Iterator[tuple[int, dict]]:
    """The rows of a CSV import whose header is exactly `columns` (in any letter case), as
    (line, {column: cell}). Blank rows are skipped; a row of the wrong width, a cell with a
    control character (`CONTROL`), or text that is not CSV, is added to `problems`. A missing
    or wrong header raises ImportInvalid. A byte-order mark (Excel's "CSV UTF-8") is skipped.
    With `our_export` (a format Rostrum also writes: the instance sets), a cell the export
    guarded against spreadsheet formulas is read as written (common.downloads.unguarded), so an
    exported file imports as it was; a file only people write keeps its apostrophes."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff")))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except (StopIteration, csv.Error):
        raise ImportInvalid([ImportProblem(1, "", "the file is empty or not CSV")]) from None
    if header != columns:
        raise ImportInvalid([ImportProblem(1, "header", f"must be exactly: {','.join(columns)}")])
    try:
        # A row is named by the line it starts on: a cell with line breaks in it (a dialogue's
        # turns) spans several, and reader.line_num is the last of them.
        start = reader.line_num + 1
        for row in reader:
            line, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(columns):
                message = f"has {len(row)} columns, expected {len(columns)}"
                problems.append(ImportProblem(line, "", message))
                continue
            cells = dict(zip(columns, map(unguarded, row) if our_export else row))
            controls = [(name, found.group()) for name in columns if (found := CONTROL.search(cells[name]))]
            for name, char in controls:
                problems.append(ImportProblem(line, name, control_message(char)))
            if not controls:
                yield line, cells
    except csv.Error as error:
        problems.append(ImportProblem(reader.line_num, "", f"not valid CSV: {error}"))


# --- The import command ------------------------------------------------------------------


class ImportCommand(BaseCommand):
    """`manage.py import_… FILE`: reads the file, runs `importer(text, path)` and prints its
    summary, or every problem with its line."""

    importer: Callable[[str, str], object]  # a staticmethod: (file text, path) -> summary

    def add_arguments(self, parser):
        parser.add_argument("path", help="the file to import")

    def handle(self, *args, path: str, **options):
        try:
            with open(path, "rb") as handle:
                summary = type(self).importer(decode(handle.read()), path)
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror}") from None
        except ImportInvalid as invalid:
            lines = "\n".join(f"  {p}" for p in invalid.problems)
            raise CommandError(f"{path}: {invalid}\n{lines}") from None
        self.stdout.write(self.style.SUCCESS(f"Imported {path}: {summary}"))


def same_fields(row, fields: dict) -> bool:
    """Whether a stored row already holds these values (the same file imported again: nothing
    to write, and nothing to report as updated)."""
    return all(getattr(row, name) == value for name, value in fields.items())
