"""`{% step_field %}` (participants/templatetags/participant_fields.py) writes out in Python
what the template `participants/_field.html` rendered, and `common.widgets_html` what
Django's widget templates rendered: both faster (issue #12). Here the old template and
Django's own template renderer are the reference: every kind of item, unbound, answered and
with errors, in English and German, with texts that need escaping, gives the same markup
(whitespace between tags aside)."""

from __future__ import annotations

import re
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


# The controls' aria-describedby: the template's `{{ field }}` can only give Django's own
# (help and errors); step_field names slider ends and counters too. Compared apart, below.
CONTROL_DESCRIBED = re.compile(r'(<(?:input|textarea)\b[^>]*?) aria-describedby="[^"]*"')


def controls_undescribed(html: str) -> str:
    return CONTROL_DESCRIBED.sub(r"\1", flat(html))


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
            assert controls_undescribed(step_field(new_field)) == controls_undescribed(expected)


def test_what_needs_escaping_is_escaped(questions):
    form = QuestionForm(questions, data=WRONG)
    page = "".join(step_field(field) for field in form)
    assert "<b>" not in page and "<i>" not in page and "<wet>" not in page and "short <" not in page
    assert "&lt;b&gt;hi&lt;/b&gt;" in page and "Blue &lt;i&gt;" in page and "Cold &amp; &lt;wet&gt;" in page
    assert 'data-show-if="colour=Prefer to self-describe"' in page


def described(page: str) -> dict[str, str]:
    """Each control's (or radio group's) name -> the ids its aria-describedby names."""
    found = {}
    for tag in re.findall(r"<(?:input|textarea|fieldset)\b[^>]*>", page):
        name = re.search(r'name="([^"]+)"', tag)
        ids = re.search(r'aria-describedby="([^"]*)"', tag)
        if ids:
            key = name.group(1) if name else "fieldset"
            found[key] = ids.group(1)
    return found


@pytest.mark.parametrize("data", [None, WRONG], ids=["unbound", "errors"])
def test_a_screen_reader_reads_help_slider_ends_counters_and_errors_with_their_control(questions, data):
    """The accessibility audit: help text had the id `<id>_help` while Django's controls
    pointed at `<id>_helptext`, errors had no id at all, and a slider's end labels and a
    text's counter were never read with their control."""
    form = QuestionForm(questions, data=data)
    if data:
        form.is_valid()
    page = "".join(step_field(field) for field in form)
    ids_on_page = set(re.findall(r' id="([^"]+)"', page))
    controls = described(page)
    for names in controls.values():  # every id named is on the page
        assert set(names.split()) <= ids_on_page, names
    errors = data is not None
    assert controls["age"] == "id_age_helptext" + (" id_age_error" if errors else "")
    assert controls["warmth"] == "id_warmth_low id_warmth_high" + (" id_warmth_error" if errors else "")
    assert controls["why"] == "id_why_counter" + (" id_why_error" if errors else "")
    assert ("plain" in controls) == errors  # no help, no end labels: only its error
    # The radio group is described on its fieldset (help, then errors), not on each radio.
    assert 'aria-describedby="id_colour_helptext' in page
    assert ("id_colour_error" in page) == errors
    if errors:
        error_block = re.search(r'<div class="field-errors" id="id_age_error">(.*?)</div>', page).group(1)
        assert error_block.startswith('<p class="error">')


def test_optional_items_say_so_but_a_box_another_answer_opens_does_not(questions):
    """The "please describe" box is not required by its field (it shows only after its option),
    but is refused empty once shown: "(optional)" there read as permission to skip it (the review)."""
    form = QuestionForm(questions)
    marked = {field.name: "(optional)" in step_field(field) for field in form}
    assert marked == {
        "colour": False,
        "colour_specify": False,
        "agree": True,
        "age": False,
        "warmth": False,
        "plain": False,
        "why": False,
        "more": True,
    }
