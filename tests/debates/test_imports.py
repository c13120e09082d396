"""The shared import toolkit's JSON parser, which remembers where things start."""

import json

import pytest

from debates.imports import JSONPosError, loads

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
