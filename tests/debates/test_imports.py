"""The shared import toolkit: the JSON parser, which remembers where things start and refuses
what no field can store, CSV rows, and the range check of integers."""

import json

import pytest
from django.db import models

from debates.imports import JSONPosError, csv_rows, integer_problem, loads

SAMPLES = [
    '{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "d\\n\\u00e9\\ud83d\\ude00"}}',
    "[]",
    "{}",
    '"just a string"',
    '[{"x": ""}, [], [[]]]',
]


@pytest.mark.parametrize("text", SAMPLES)
def test_it_reads_what_the_standard_parser_reads(text):
    assert loads(text) == json.loads(text)


def test_it_remembers_where_keys_and_items_start():
    doc = loads('{\n  "a": 1,\n  "b": [\n    {"c": 2},\n    3\n  ]\n}')
    assert doc.line == 1
    assert doc.key_line("a") == 2 and doc.key_line("b") == 3
    assert doc["b"].item_line(0) == 4 and doc["b"].item_line(1) == 5
    assert doc["b"][0].line == 4


@pytest.mark.parametrize(
    "text, line, message",
    [
        ('{\n"a": 1\n"b": 2}', 2, "expected ',' or '}'"),
        ('{"a": 1,\n"a": 2}', 2, "duplicate key 'a'"),
        ("[1,\n2,\n", 3, "unexpected end of file"),
        ('{"a": "line\nbreak"}', 1, "control character"),
        ('{"a": tru}', 1, "unexpected character"),
        ('{"a": 1} x', 1, "unexpected text after the end"),
        ('"\\q"', 1, "bad escape"),
        # Values no field can store, refused with their line too.
        ('{"format":\n' + "1" * 5000 + "}", 2, "number out of range (more than 19 digits)"),
        ("[\n-" + "9" * 20 + "]", 2, "number out of range"),
        ('{"a":\n"x\\udc00"}', 2, "\\udc00 is half of a surrogate pair, without its other half"),
        ('{"a":\n"\\ud83d then text"}', 2, "\\ud83d is half of a surrogate pair"),
        ('{"a":\n"\\ud83d\\u0041"}', 2, "\\ud83d is half of a surrogate pair"),
        ('{"a":\n"nul \\u0000 here"}', 2, "a control character (U+0000) is not allowed in text"),
        ('{"a":\n"\\u001b[31m"}', 2, "a control character (U+001B) is not allowed in text"),
        ('{"a":\n"\\f"}', 2, "a control character (U+000C) is not allowed in text"),
        ('{"\\u0000":\n1}', 1, "a control character (U+0000)"),
        # DEL and C1 characters, escaped or as they are: mojibake of Windows-1252 punctuation.
        ('{"a":\n"it\\u0092s"}', 2, "a control character (U+0092) is not allowed in text (was the file"),
        ('{"a":\n"it\x92s"}', 2, "a control character (U+0092) is not allowed in text (was the file"),
        ('{"a":\n"rub\x7fout"}', 2, "a control character (U+007F) is not allowed in text"),
        ('{"a\x85":\n1}', 1, "a control character (U+0085)"),
        ("[\u0661]", 1, "unexpected character"),
    ],
)
def test_errors_carry_the_line(text, line, message):
    with pytest.raises(JSONPosError) as info:
        loads(text)
    assert info.value.line == line
    assert message in info.value.message


def test_deep_nesting_is_refused_not_a_crash():
    with pytest.raises(JSONPosError):
        loads("[" * 1000 + "]" * 1000)


def test_a_surrogate_pair_tab_and_line_breaks_still_decode():
    assert loads('"\\ud83d\\ude00 \\t\\n\\r"') == "\U0001f600 \t\n\r"
    # Text around the control blocks decodes, escaped or not: curly quotes, NBSP, accents.
    assert loads('["it\u2019s \\u2019 caf\u00e9\u00a0\\u00a0\u00ff~"]') == [
        "it\u2019s \u2019 caf\u00e9\u00a0\u00a0\u00ff~"
    ]
    assert loads("[" + "9" * 19 + "]") == [int("9" * 19)]


def test_a_csv_cell_with_a_control_character_is_a_problem_of_its_line_and_column():
    problems = []
    rows = list(csv_rows("a,b\nok,fine\nbad,x\x00y\n\x1bz,w\nit\x92s,\x7f\n", ["a", "b"], problems))
    assert rows == [(2, {"a": "ok", "b": "fine"})]
    assert [str(p) for p in problems] == [
        "line 3, b: a control character (U+0000) is not allowed in text",
        "line 4, a: a control character (U+001B) is not allowed in text",
        "line 5, a: a control character (U+0092) is not allowed in text"
        " (was the file Windows-1252 text converted to UTF-8 as Latin-1?)",
        "line 5, b: a control character (U+007F) is not allowed in text",
    ]


@pytest.mark.parametrize(
    "field, value, minimum, problem",
    [
        (models.PositiveIntegerField(), 2**31 - 1, 1, None),
        (models.PositiveIntegerField(), 2**32 + 5, 1, "must be a whole number from 1 to 2147483647"),
        (models.PositiveIntegerField(), 0, 1, "must be a whole number from 1 to 2147483647"),
        (models.PositiveIntegerField(), 0, None, None),
        (models.PositiveSmallIntegerField(), 65540, 1, "must be a whole number from 1 to 32767"),
        (models.SmallIntegerField(), -32769, None, "must be a whole number from -32768 to 32767"),
        (models.IntegerField(), -(2**31), None, None),
        (
            models.BigIntegerField(),
            2**63,
            None,
            "must be a whole number from -9223372036854775808 to 9223372036854775807",
        ),
    ],
)
def test_an_integer_must_fit_its_field_on_every_database(field, value, minimum, problem):
    """The field's own range, not SQLite's 64 bits: PostgreSQL wraps a number past it."""
    assert integer_problem(value, field, minimum=minimum) == problem
