"""Read a participant page's step form the way a browser would (used by tests and bench)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class StepForm:
    title: str = ""
    kind: str = ""
    position: str = ""
    hidden: dict[str, str] = field(default_factory=dict)
    radios: dict[str, list[str]] = field(default_factory=dict)
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    numbers: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    texts: dict[str, int] = field(default_factory=dict)  # name -> minimum length
    buttons: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)  # radio value -> label text, last seen

    @property
    def field_names(self) -> set[str]:
        return set(self.radios) | set(self.ranges) | set(self.numbers) | set(self.texts)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.form = StepForm()
        self.in_form = False
        self.capture: str | None = None
        self.buffer: list[str] = []
        self.pending_min: dict[str, int] = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "h1":
            self.capture, self.buffer = "h1", []
        if tag == "p" and "error" in classes:
            self.capture, self.buffer = "error", []
        if tag == "p" and "counter" in classes and a.get("data-for"):
            self.pending_min[a["data-for"]] = int(a.get("data-min") or 0)
        if tag == "form" and "step-form" in classes:
            self.in_form = True
            self.form.kind = a.get("data-step-kind", "")
        if not self.in_form:
            return
        name = a.get("name")
        if tag == "input" and name:
            kind = a.get("type", "text")
            if kind == "hidden":
                self.form.hidden[name] = a.get("value", "")
            elif kind == "radio":
                self.form.radios.setdefault(name, []).append(a.get("value", ""))
            elif kind == "range":
                self.form.ranges[name] = (int(a.get("min", 0)), int(a.get("max", 100)))
            elif kind == "number":
                low, high = a.get("min"), a.get("max")
                self.form.numbers[name] = (int(low) if low else None, int(high) if high else None)
            else:
                self.form.texts[name] = 0
        elif tag == "textarea" and name:
            self.form.texts[name] = 0
            self.form.hidden.pop(name, None)
            self.textarea_id = a.get("id")
        elif tag == "button" and a.get("type", "submit") == "submit":
            self.form.buttons.append((a.get("name") or "", a.get("value") or ""))

    def handle_endtag(self, tag):
        if tag == "form" and self.in_form:
            self.in_form = False
        if self.capture == "h1" and tag == "h1":
            self.form.title = "".join(self.buffer).strip()
            self.capture = None
        if self.capture == "error" and tag == "p":
            self.form.errors.append("".join(self.buffer).strip())
            self.capture = None

    def handle_data(self, data):
        if self.capture:
            self.buffer.append(data)


def parse_step(html: str) -> StepForm:
    parser = _Parser()
    parser.feed(html)
    form = parser.form
    form.position = form.hidden.get("_position", "")
    for field_id, minimum in parser.pending_min.items():
        name = field_id.removeprefix("id_")
        if name in form.texts:
            form.texts[name] = minimum
    return form


def default_answers(form: StepForm, overrides: dict | None = None) -> dict[str, str]:
    """A valid answer for every field: first option, mid-range numbers, long enough text."""
    data = {k: v for k, v in form.hidden.items()}
    for name, options in form.radios.items():
        data[name] = options[0]
    for name, (low, high) in form.ranges.items():
        data[name] = str((low + high) // 2)
        data[f"{name}__touched"] = "1"  # as the page's script marks a slider the participant moved
    for name, (low, high) in form.numbers.items():
        data[name] = str(max(low or 0, min(high or 40, 40)))
    for name, minimum in form.texts.items():
        data[name] = "I weighed the evidence each side cited and the timeline." + "." * max(0, minimum - 55)
    for name, value in form.buttons:
        if name:
            data[name] = value
            break
    data.update(overrides or {})
    return data
