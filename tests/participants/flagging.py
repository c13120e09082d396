"""The participants the flag tests need: a person who takes their time and whose browser sends
typing counts, and a naive bot that fills every text box of a page."""

from __future__ import annotations

from datetime import timedelta
from html.parser import HTMLParser

from django.utils import timezone

from participants.models import Participant
from tests.support.cast import Walker

TEXT = "I compared what each side said with the evidence and with the timeline of events."
SPAM = "https://example.org/best-offers"


def backdate(walker: Walker, seconds: float) -> None:
    """The current page was served (and became current) `seconds` ago: time on the page is
    controlled through the stored timestamps, never by waiting."""
    past = timezone.now() - timedelta(seconds=seconds)
    Participant.objects.filter(study=walker.study, prolific_pid=walker.pid).update(
        served_at=past, shown_at=past
    )


def typed(name: str, text: str = TEXT, *, keys=None, pastes=0, pasted=0, typing_ms=None) -> dict[str, str]:
    """A textarea's answer and what step.js sends about it: by default a person typing at about
    four characters a second, with a few corrections."""
    return {
        name: text,
        f"_keys.{name}": str(len(text) + 6 if keys is None else keys),
        f"_pastes.{name}": str(pastes),
        f"_pasted.{name}": str(pasted),
        f"_typing_ms.{name}": str(len(text) * 250 if typing_ms is None else typing_ms),
    }


class Person(Walker):
    """A participant in a browser: every page is served, read for `seconds`, and each free text
    is typed (step.js's counts are sent with the form)."""

    seconds = 90

    def answer(self, overrides: dict | None = None):
        _, form = self.page()
        backdate(self, self.seconds)
        overrides = overrides or {}
        data: dict[str, str] = {}
        for name in form.texts:
            if name not in overrides:
                data.update(typed(name))
        return self.submit({**data, **overrides}, form)

    def walk(self, answers: dict[str, dict] | None = None, stop_before: str | None = None, limit: int = 30):
        answers = answers or {}
        for _ in range(limit):
            _, form = self.page()
            if not form.position or (stop_before and form.title == stop_before):
                return
            response = self.answer(answers.get(form.title))
            assert response.status_code in (302, 303), (form.title, form.errors)
            if self.exit_url:
                return
        raise AssertionError("the study did not end")


class TextBoxes(HTMLParser):
    """Every text box of a whole page, as a script reading the HTML finds them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.names: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        text_input = tag == "input" and a.get("type", "text") in ("text", "email", "url", "search", "tel")
        if (text_input or tag == "textarea") and a.get("name"):
            self.names.append(a["name"])


class NaiveBot(Walker):
    """A script that answers every field it finds in the page's HTML: each text box outside the
    step form's own fields gets a URL, as form-filling bots do."""

    def answer(self, overrides: dict | None = None):
        response, form = self.page()
        boxes = TextBoxes(response.content.decode()).names
        data = {name: SPAM for name in boxes if name not in form.texts}
        return self.submit({**data, **(overrides or {})}, form)

    def walk(self, answers: dict[str, dict] | None = None, stop_before: str | None = None, limit: int = 30):
        answers = answers or {}
        for _ in range(limit):
            _, form = self.page()
            if not form.position:
                return
            response = self.answer(answers.get(form.title))
            assert response.status_code in (302, 303), (form.title, form.errors)
            if self.exit_url:
                return
        raise AssertionError("the study did not end")
