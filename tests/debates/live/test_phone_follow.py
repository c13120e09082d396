"""Design B on a phone: the page follows the reply being written, the status bar never covers
it, a reader who scrolls up is offered "New text below" instead of being pulled down, and
when the conversation is over the button to continue is on the screen.

The same servers as test_browser.py (uvicorn, a Celery worker, Redis, the fake model)."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.debates.live.test_browser import (  # noqa: F401 (fixtures)
    TURN_WAIT,
    finish_button,
    model_server,
    pass_turn,
    phone,
    reach_chat,
    server,
    study,
    use_model,
    wait_for_judge_turn,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]

GEOMETRY = """() => {
    const writing = document.querySelector('#chat > li.writing');
    const bar = document.querySelector('.live-bar').getBoundingClientRect();
    const box = writing ? writing.getBoundingClientRect() : null;
    return {
        writing: !!writing, length: writing ? writing.querySelector('.msg-text').textContent.length : 0,
        bottom: box ? box.bottom : 0, top: box ? box.top : 0, barTop: bar.top, barBottom: bar.bottom,
        height: window.innerHeight, y: window.scrollY,
    };
}"""


def geometry(page: Page) -> dict:
    return page.evaluate(GEOMETRY)


def wait_until_writing_past_the_screen(page: Page) -> None:
    page.wait_for_function(
        """() => {
            const w = document.querySelector('#chat > li.writing');
            return w && w.getBoundingClientRect().height > window.innerHeight / 2
                && document.documentElement.scrollHeight > window.innerHeight * 1.3;
        }""",
        timeout=TURN_WAIT,
    )


def test_on_a_phone_the_page_follows_the_reply_above_the_status_bar_and_ends_on_the_continue_button(
    server,  # noqa: F811
    phone,  # noqa: F811
    study,  # noqa: F811
):
    use_model("tps=50:tokens=320")  # about 6 s a reply: still writing when the reader scrolls up (at 3 s,
    # a loaded machine had finished it first, and nothing was new below)
    page = phone.new_page()
    reach_chat(page, server, study, "debate")
    wait_until_writing_past_the_screen(page)

    # While the reply streams, its newest line stays on the screen, above the status bar.
    samples = []
    for _ in range(8):
        g = geometry(page)
        if g["writing"]:
            samples.append(g)
            assert g["bottom"] <= g["barTop"] + 1, g  # the bar never covers the text being written
            assert g["bottom"] <= g["height"], g
            assert g["barBottom"] <= g["height"] + 1, g  # the bar itself is on the screen
        time.sleep(0.15)
    assert len(samples) >= 3
    assert samples[-1]["y"] > 0  # the page did scroll down to follow

    # The reader scrolls up to read: the page stays put and offers the new text below.
    page.wait_for_function("() => document.querySelector('#chat > li.writing')", timeout=TURN_WAIT)
    page.evaluate("window.scrollBy(0, -350)")
    expect(page.locator("#new-below")).to_be_visible(timeout=TURN_WAIT)
    expect(page.locator("#new-below")).to_have_text("Scroll to the new text ↓")
    held = page.evaluate("window.scrollY")
    time.sleep(0.5)
    if geometry(page)["writing"]:
        assert page.evaluate("window.scrollY") == held  # not pulled back down while reading
    page.locator("#new-below").tap()
    expect(page.locator("#new-below")).to_be_hidden()
    g = geometry(page)
    if g["writing"]:
        assert g["bottom"] <= g["barTop"] + 1, g

    # To the end of the conversation: the continue button is scrolled into view, uncovered.
    use_model("tps=400:tokens=60")
    for shown in (2, 5):
        wait_for_judge_turn(page, shown=shown)
        pass_turn(page)
    expect(finish_button(page)).to_be_enabled(timeout=TURN_WAIT)
    in_view = """() => {
        const b = document.getElementById('finish').getBoundingClientRect();
        return b.top >= 0 && b.bottom <= window.innerHeight;
    }"""
    # Brought into view at once, or, when the participant was reading higher up as it ended
    # (a matter of timing here), offered by the "Continue below" button.
    page.wait_for_function(
        f"() => ({in_view})() || !document.getElementById('new-below').hidden", timeout=TURN_WAIT
    )
    if not page.evaluate(in_view):
        expect(page.locator("#new-below")).to_have_text("Scroll to the Continue button ↓")
        page.locator("#new-below").tap()
    page.wait_for_function(in_view, timeout=5_000)
    box = finish_button(page).bounding_box()
    bar = page.locator(".live-bar").bounding_box()
    assert bar["y"] + bar["height"] <= box["y"] + 1 or bar["y"] >= box["y"] + box["height"] - 1, (bar, box)
