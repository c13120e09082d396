"""A generic participant in a real browser: Chromium (Playwright) walks a study from its
Prolific link to Prolific's completion URL, answering whatever each page asks as a careful
person would, without knowing the study.

    .venv/bin/python -m devtools.browser_walk --base-url http://127.0.0.1:8000 [--phone] SLUG...

Per page: an instructed-response item gets the option it asks for (`pilots.pages`), any other
choice its first option, a slider is moved with the keyboard, a number box gets a value in its
range, a text box a few sentences; then the page's first submit button. A live debate is
joined: one question, then passes until the conversation is over; a persuasion dialogue gets
a few turns until it ends. Two walkers started together on a study of human pairs meet in its
waiting room. Prints, per study, the code it left with, the pages it saw and any problem: a
browser console error, a page wider than the screen, a form shown again with an error, a
page with nothing to press. Exits 1 when a study was not completed. Needs Debian's chromium
(`bash scripts/test.sh` installs it) and the development requirements.
"""

from __future__ import annotations

import argparse
import re
import secrets
import sys
import time

from pilots.pages import instructed_answer

CHROMIUM = "/usr/bin/chromium"
PROLIFIC = "app.prolific.com"
TEXT = "I read both sides carefully and weighed the evidence each of them cited before answering."
TURNS = [
    "Public investment builds the roads and railways that private firms will not build.",
    "Why do you think private firms would fund that on their own?",
    "Most modern medicines came from publicly funded research.",
]
VISIBLE_GROUPS = """() => [...new Set([...document.querySelectorAll('input[type=radio]')]
    .filter(e => (e.closest('label, li, div') || e).offsetParent !== null).map(e => e.name))]"""
GROUP_TEXT = """n => { const e = document.querySelector(`input[name='${n}']`);
    const box = e.closest('fieldset') || e.closest('.field') || e.parentElement.parentElement;
    return box ? box.innerText : ''; }"""


def answer_page(page) -> None:
    """Twice: an answer may open a follow-up question ("which side?" after "yes")."""
    for _ in range(2):
        answer_fields(page)


def answer_fields(page) -> None:
    for name in page.evaluate(VISIBLE_GROUPS):
        radios = page.locator(f"input[type=radio][name='{name}']")
        if page.locator(f"input[type=radio][name='{name}']:checked").count():
            continue
        labels = {}
        for i in range(radios.count()):
            rid = radios.nth(i).get_attribute("id")
            label = page.locator(f"label[for='{rid}']") if rid else None
            labels[str(i)] = label.first.inner_text().strip() if label is not None and label.count() else ""
        asked = instructed_answer(page.evaluate(GROUP_TEXT, name), labels)
        chosen = radios.nth(int(asked) if asked is not None else 0)
        rid = chosen.get_attribute("id")
        if rid and page.locator(f"label[for='{rid}']").count():
            page.locator(f"label[for='{rid}']").first.click(timeout=5000)
        else:
            chosen.check(force=True)
    for slider in page.locator("input[type=range]").all():
        if slider.is_visible():
            slider.focus()
            for _ in range(7):
                slider.press("ArrowRight")
    for box in page.locator("input[type=number]").all():
        if box.is_visible() and not box.input_value():
            low, high = float(box.get_attribute("min") or 0), float(box.get_attribute("max") or 10**9)
            box.fill(str(int(min(max(low, 30), high))))
    for box in page.locator("textarea, input[type=text]").all():
        if box.is_visible() and not box.input_value():
            box.fill(TEXT)
    for box in page.locator("input[type=checkbox]").all():
        if box.is_visible() and not box.is_checked():
            box.check()
    for select in page.locator("select").all():
        if select.is_visible():
            values = select.evaluate("s => [...s.options].map(o => o.value).filter(v => v)")
            if values:
                select.select_option(values[0])


def live_chat(page, within: float = 300) -> None:
    deadline, turns = time.monotonic() + within, 0
    while time.monotonic() < deadline:
        page.wait_for_function(
            "() => !document.getElementById('composer').hidden"
            " || !document.getElementById('finish').disabled",
            timeout=120_000,
        )
        if page.locator("#finish").is_enabled():
            page.locator("#finish").click()
            return
        if turns == 0:
            page.locator("#question").fill("Which of your sources is the most recent?")
            page.locator("#send").click()
        else:
            page.locator("#pass").click()
        turns += 1
        page.wait_for_function("() => document.getElementById('composer').hidden", timeout=30_000)
    raise RuntimeError("the live conversation did not end")


def dialogue(page, within: float = 600) -> None:
    deadline, turns = time.monotonic() + within, 0
    while time.monotonic() < deadline:
        page.wait_for_function(
            "() => !document.getElementById('p-composer').hidden"
            " || !document.getElementById('p-finish').disabled",
            timeout=240_000,
        )
        if page.locator("#p-finish").is_enabled():
            page.locator("#p-finish").click()
            return
        page.locator("#p-composer textarea").fill(TURNS[turns % len(TURNS)])
        page.get_by_role("button", name=re.compile("Send")).click()
        turns += 1
        page.wait_for_function("() => document.getElementById('p-composer').hidden", timeout=30_000)
    raise RuntimeError("the dialogue did not end")


def walk(browser, base: str, slug: str, phone: bool) -> dict:
    phone_screen = {"viewport": {"width": 375, "height": 740}, "is_mobile": True, "has_touch": True}
    options = phone_screen if phone else {}
    context = browser.new_context(**options)
    page = context.new_page()
    left, problems, pages = [], [], []
    page.on("request", lambda r: left.append(r.url) if PROLIFIC in r.url else None)
    page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    ids = [secrets.token_hex(12) for _ in range(3)]
    page.goto(f"{base}/s/{slug}/?PROLIFIC_PID={ids[0]}&STUDY_ID={ids[1]}&SESSION_ID={ids[2]}")
    for _ in range(60):
        if left:
            break
        title = page.locator("h1").first.inner_text() if page.locator("h1").count() else page.url
        pages.append(title)
        if page.evaluate("() => document.documentElement.scrollWidth > window.innerWidth + 1"):
            problems.append(f"wider than the screen: {title}")
        if page.locator("#live #composer").count():
            live_chat(page)
            page.wait_for_load_state()
            continue
        if page.locator("#persuasion").count():
            dialogue(page)
            page.wait_for_load_state()
            continue
        answer_page(page)
        button = page.locator("form button[type=submit], form input[type=submit], a.button").first
        if not button.count():
            problems.append(f"nothing to press on {title}")
            break
        try:
            with page.expect_navigation(timeout=30_000):
                button.click()
        except Exception as exc:  # noqa: BLE001 - the way to Prolific ends in a failed lookup
            if not left:
                problems.append(f"{title}: {str(exc).splitlines()[0]}")
        shown = page.locator(".errorlist, .error")
        if not left and shown.count() and shown.first.is_visible():
            problems.append(f"an error on {title}: {shown.first.inner_text()[:120]}")
    context.close()
    return {"slug": slug, "left_with": left[0] if left else "", "pages": pages, "problems": problems}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("slugs", nargs="+", help="studies to walk, one after another")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--phone", action="store_true", help="a phone's screen (375 x 740, touch)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    failed = False
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", f"--host-resolver-rules=MAP {PROLIFIC} 127.0.0.1:9"],  # never leaves
        )
        for slug in args.slugs:
            result = walk(browser, args.base_url.rstrip("/"), slug, args.phone)
            failed |= not result["left_with"]
            print(f"{slug}: {result['left_with'] or 'NOT COMPLETED'}")
            print(f"  pages: {' | '.join(result['pages'])}")
            for problem in result["problems"]:
                print(f"  problem: {problem}")
        browser.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
