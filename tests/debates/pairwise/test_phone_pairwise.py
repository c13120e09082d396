"""Design D on a phone (390 x 844): each turn of the two excerpts is folded to its first lines
with a "Read all" toggle (details/summary, no script), so the page is a few screens long
instead of thousands of pixels; opened, a turn shows its whole text."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from debates.demo import loader
from tests.support.browser import new_context, submit
from tests.support.cast import entry_url, pid

pytestmark = [pytest.mark.postgres, pytest.mark.browser]


@pytest.fixture
def pairs(transactional_db):
    return loader.pairs_study()


def test_on_a_phone_a_comparison_page_is_short_and_each_turn_opens_in_full(server, browser, pairs):
    phone = new_context(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = phone.new_page()
    page.goto(server + entry_url(pairs, pid()))
    submit(page, "I agree to take part")
    folded = page.evaluate("document.documentElement.scrollHeight")
    print(f"\nphone page height, folded: {folded} px")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    turns = page.locator(".excerpt .fold")
    count = turns.count()
    assert count >= 4
    first = turns.first
    expect(first.locator(".fold-preview")).to_be_visible()
    expect(first.locator(".prose")).to_be_hidden()
    for n in range(count):
        turns.nth(n).locator("summary").tap()
        expect(turns.nth(n).locator(".prose")).to_be_visible()
        expect(turns.nth(n).locator(".fold-preview")).to_be_hidden()
        expect(turns.nth(n).locator(".fold-less")).to_have_text("Show less")
    opened = page.evaluate("document.documentElement.scrollHeight")
    print(f"phone page height, every turn opened: {opened} px")
    assert folded < 3500 and folded < opened / 2
    first.locator("summary").tap()
    expect(first.locator(".prose")).to_be_hidden()
    # The answer is still reachable and the excerpts stacked.
    boxes = [page.locator(".excerpt").nth(n).bounding_box() for n in range(2)]
    assert boxes[1]["y"] >= boxes[0]["y"] + boxes[0]["height"]
    phone.close()
