"""`{% step_field %}` (participants/templatetags/participant_fields.py) writes out in Python
what the template `participants/_field.html` rendered, and `common.widgets_html` what
Django's widget templates rendered: both faster (issue #12). Here the old template and
Django's own template renderer are the reference: every kind of item, unbound, answered and
with errors, in English and German, with texts that need escaping, gives the same markup
(whitespace between tags aside)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.forms.renderers import DjangoTemplates
from django.template import engines
from django.utils import translation

from participants.forms import QuestionForm
from participants.templatetags.participant_fields import step_field
from tests.support.studies import build_study

# participants/_field.html as it was when step_field replaced it.
OLD_FIELD = (Path(__file__).parent / "data" / "old_field.html").read_text()

TRICKY = "Say \"<b>hi</b>\" & 'bye'"
QUESTIONS = [
    {
        "key": "colour",
        "kind": "single_choice",
        "text": f"Pick a colour\n{TRICKY}",
        "help_text": TRICKY,
        "options": ["Red", "Blue <i>", "Prefer to self-describe"],
        "specify_option": "Prefer to self-describe",
    },
    {
        "key": "agree",
        "kind": "likert",
        "text": "I like it",
        "options": ["No", "Meh", "Yes"],
        "required": False,
    },
    {"key": "age", "kind": "number", "text": "Age", "min_value": 18, "max_value": 99, "help_text": TRICKY},
    {"key": "warmth", "kind": "slider", "text": "How warm?", "options": ["Cold & <wet>", "Hot"]},
    {"key": "plain", "kind": "slider", "text": "Plain slider", "min_value": 1, "max_value": 7},
    {"key": "why", "kind": "text", "text": "Why?", "min_length": 10},
    {"key": "more", "kind": "text", "text": "Anything else?", "required": False},
]
ANSWERED = {
    "colour": "Prefer to self-describe",
    "colour_specify": TRICKY,
    "agree": "Meh",
    "age": "42",
    "warmth": "63",
    "warmth__touched": "1",
    "plain": "4",
    "plain__touched": "1",
    "why": f"Because {TRICKY}",
    "more": "",
}
WRONG = {"colour": "Green", "age": "12", "why": "short <", "colour_specify": ""}


def flat(html: str) -> str:
    return " ".join(html.split()).replace("> <", "><")


@pytest.fixture
def questions(db):
    study = build_study([{"kind": "questionnaire", "title": "Every kind", "questions": QUESTIONS}])
    return list(study.steps.get(title="Every kind").questions.all())


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("data", [None, ANSWERED, WRONG], ids=["unbound", "answered", "errors"])
def test_every_field_reads_as_the_old_template_rendered_it(questions, data, language):
    old = engines["django"].from_string(OLD_FIELD)
    with translation.override(language):
        fast = QuestionForm(questions, data=data)
        stock = QuestionForm(questions, data=data, renderer=DjangoTemplates())  # Django's widget templates
        if data is not None:
            assert fast.is_valid() == stock.is_valid() == (data is ANSWERED)
        assert len(list(fast)) == 8  # seven items and the self-describe box
        for new_field, old_field in zip(fast, stock, strict=True):
            expected = old.render({"field": old_field})
            assert flat(step_field(new_field)) == flat(expected)


def test_what_needs_escaping_is_escaped(questions):
    form = QuestionForm(questions, data=WRONG)
    page = "".join(step_field(field) for field in form)
    assert "<b>" not in page and "<i>" not in page and "<wet>" not in page and "short <" not in page
    assert "&lt;b&gt;hi&lt;/b&gt;" in page and "Blue &lt;i&gt;" in page and "Cold &amp; &lt;wet&gt;" in page
    assert 'data-show-if="colour=Prefer to self-describe"' in page
