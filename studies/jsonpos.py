"""A small JSON parser that remembers line numbers, so import errors can name the line.

`loads(text)` returns ordinary Python values, except that objects are `PosDict` and arrays
are `PosList`, which carry `.line` (where they open) and, for each key or item, the line it
starts on (`key_line(key)`, `item_line(index)`). Errors raise `JSONPosError` with a line.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
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
            self.i = match.end()
            raw = match.group()
            return float(raw) if any(c in raw for c in ".eE") else int(raw)
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
            end = self.i
            while end < len(text) and text[end] not in '"\\' and text[end] >= " ":
                end += 1
            parts.append(text[self.i : end])
            if end >= len(text):
                raise self.fail("unterminated string", start)
            ch = text[end]
            if ch == '"':
                self.i = end + 1
                return "".join(parts)
            if ch < " ":
                raise self.fail("control character in a string (use \\n for a line break)", end)
            self.i = end + 1
            parts.append(self.escape())

    def escape(self) -> str:
        if self.i >= len(self.text):
            raise self.fail("unterminated string")
        ch = self.text[self.i]
        if ch in _ESCAPES:
            self.i += 1
            return _ESCAPES[ch]
        if ch == "u":
            code = self.hex4(self.i + 1)
            self.i += 5
            if 0xD800 <= code < 0xDC00 and self.text.startswith("\\u", self.i):
                low = self.hex4(self.i + 2)
                if 0xDC00 <= low < 0xE000:
                    self.i += 6
                    return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
            return chr(code)
        raise self.fail(f"bad escape \\{ch}")

    def hex4(self, at: int) -> int:
        digits = self.text[at : at + 4]
        if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise self.fail("bad \\u escape", at)
        return int(digits, 16)


def loads(text: str):
    if text.startswith("\ufeff"):
        text = text[1:]
    return _Parser(text).parse()
