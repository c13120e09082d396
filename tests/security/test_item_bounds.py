"""Every answer a participant page takes is bounded: hostile values (a 400-digit number,
100,000 characters, a NUL, an option that is not offered) get a form error, never a 500.

Driven through the real participant pages with Django's test client, which raises any
exception a view lets escape: a 500 fails the test."""

from __future__ import annotations

import pytest

from participants.models import Participant, Response
from tests.support.cast import Walker
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

FOUR_HUNDRED_DIGITS = "9" * 400
HOSTILE = [
    "\x00",
    "x" * 100_000,
    FOUR_HUNDRED_DIGITS,
    "-" + FOUR_HUNDRED_DIGITS,
    "9" * 5000,
    "1e400",
    "nan",
    "-inf",
    "Not an option",
]
TIMING = {"_active_ms", "_hidden_ms", "_blurs", "_reread_ms"}

ALL_KINDS = [
    CONSENT_STEP,
    {
        "kind": "questionnaire",
        "title": "Every kind",
        "questions": [
            {"key": "open_number", "kind": "number", "text": "How many books do you own?"},
            {"key": "from_zero", "kind": "number", "text": "How many pets?", "min_value": 0},
            {"key": "age", "kind": "number", "text": "Age", "min_value": 18, "max_value": 99},
            {"key": "siblings", "kind": "number", "text": "Siblings?", "required": False},
            {"key": "warmth", "kind": "slider", "text": "How warm?"},
            {"key": "agree", "kind": "likert", "text": "I like tests", "options": ["No", "Meh", "Yes"]},
            {"key": "colour", "kind": "single_choice", "text": "Pick a colour", "options": ["Red", "Blue"]},
            {"key": "because", "kind": "text", "text": "Why?", "min_length": 10},
        ],
    },
    DEBRIEF_STEP,
]


@pytest.fixture
def all_kinds_walker(db) -> Walker:
    walker = Walker(build_study(ALL_KINDS))
    walker.enter()
    walker.submit()  # consent
    return walker


@pytest.mark.django_db
class TestNumberItems:
    def test_a_400_digit_value_for_a_number_without_a_maximum_is_a_form_error(self, all_kinds_walker):
        response = all_kinds_walker.submit({"open_number": FOUR_HUNDRED_DIGITS})
        assert response.status_code == 200
        assert "Enter a whole number from -999999999 to 999999999." in response.content.decode()
        assert not Response.objects.filter(key="open_number").exists()
        assert Participant.objects.get().position == 2

    def test_a_number_item_without_bounds_still_shows_them_to_the_browser(self, all_kinds_walker):
        _, form = all_kinds_walker.page()
        assert form.numbers["open_number"] == (-999_999_999, 999_999_999)
        assert form.numbers["from_zero"] == (0, 999_999_999)

    def test_the_experimenters_own_bounds_are_kept_with_a_clear_message(self, all_kinds_walker):
        response = all_kinds_walker.submit({"age": "150"})
        assert "Enter a whole number from 18 to 99." in response.content.decode()

    def test_large_answers_within_the_bounds_are_stored_exactly(self, all_kinds_walker):
        response = all_kinds_walker.submit({"open_number": "-999999999", "from_zero": "999999999"})
        assert response.status_code in (302, 303)
        stored = {r.key: r.value_num for r in Response.objects.filter(key__in=["open_number", "from_zero"])}
        assert stored == {"open_number": -999_999_999.0, "from_zero": 999_999_999.0}


def fuzz_the_current_page(walker: Walker) -> set[str]:
    """Post each hostile value into each field of the current page (the other fields valid);
    returns the fields fuzzed. Any 500 raises out of the test client."""
    _, form = walker.page()
    fuzzed = set()
    # Buttons, choices, sliders and numbers first, free text later (digits are fine text),
    # then the hidden fields, the browser's timing last: garbage timing is ignored, so the
    # page's valid answers go through.
    names = [*sorted(form.radios), *sorted(form.ranges), *sorted(form.numbers), *sorted(form.texts)]
    buttons = sorted({name for name, _ in form.buttons if name})
    hidden = sorted(form.hidden, key=lambda name: (name in TIMING, name))
    for name in [*buttons, *names, *hidden]:
        fuzzed.add(name)
        for value in HOSTILE:
            response = walker.submit({name: value}, form)
            assert response.status_code in (200, 302, 303), (form.title, name, response.status_code)
            _, now = walker.page()
            if now.position != form.position or walker.exit_url:
                return fuzzed  # a hostile value was a fine answer here: the page moved on
    return fuzzed


def fuzz_the_study(walker: Walker, pages: int = 30) -> dict[str, set[str]]:
    """The fields fuzzed, by page title, until the study ends or a page needs more than a form."""
    walker.enter()
    fuzzed = {}
    for _ in range(pages):
        _, form = walker.page()
        if not form.position or walker.exit_url:
            break
        fuzzed[form.title] = fuzz_the_current_page(walker)
        _, again = walker.page()
        if again.position == form.position:
            walker.submit(form=again)
            if walker.page()[1].position == form.position:
                break  # a page a participant does not pass by a form alone (a live exchange)
    return fuzzed


@pytest.mark.django_db
class TestEveryPage:
    def test_every_item_kind_refuses_hostile_values_without_an_error_page(self, db):
        fuzzed = fuzz_the_study(Walker(build_study(ALL_KINDS)))
        items = {q["key"] for q in ALL_KINDS[1]["questions"]}
        assert items <= fuzzed["Every kind"]

    @pytest.mark.parametrize("study", ["mystery_study", "pairs_study", "claim_study"])
    def test_the_demo_studies_pages_refuse_hostile_values_without_an_error_page(self, study, request):
        fuzzed = fuzz_the_study(Walker(request.getfixturevalue(study)))
        assert sum(len(fields) for fields in fuzzed.values()) > 10
