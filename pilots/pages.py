"""Read a participant page the way a browser shows it, and answer it as a person would.

Pure Python (no Django, no database): what a simulated participant knows is what the page
says. `parse_step()` reads the step form (its fields, options with their labels, each
question's text, buttons, errors) and the page's visible text; `default_answers()` gives a
valid answer for every field; `instructed_answer()` reads an instructed-response item
("please select 'Disagree'", in English or German: "wählen Sie „Stimme nicht zu“") and names
the option it asks for. Used by the pilots (`pilots.walker`), the tests and bench (through
`devtools.formparse`), and the demo walker.

The honeypot field of every step form sits outside the form element (it joins the form by
`form="step-form"`), so this parser, which models what a person fills, never fills it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

SKIPPED_TAGS = {"script", "style", "noscript", "template"}
VOID_TAGS = {"input", "br", "hr", "img", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}
BLOCK_TAGS = {"p", "div", "li", "h1", "h2", "h3", "h4", "legend", "label", "tr", "section", "fieldset", "br"}


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
    options: dict[str, dict[str, str]] = field(default_factory=dict)  # radio name -> value -> label
    questions: dict[str, str] = field(default_factory=dict)  # field name -> its question (legend/label)
    button_labels: list[str] = field(default_factory=list)  # the submit buttons' text, in order
    text: str = ""  # the page's visible text, a line per block
    progress: str = ""  # "Step 3 of 11"

    @property
    def field_names(self) -> set[str]:
        return set(self.radios) | set(self.ranges) | set(self.numbers) | set(self.texts)

    def describe(self) -> list[dict]:
        """The form's fields as a model is told about them: name, kind, question, choices."""
        fields = []
        for name, values in self.radios.items():
            labels = self.options.get(name, {})
            choices = [{"value": v, "label": labels.get(v, v)} for v in values]
            fields.append(
                {"name": name, "type": "choice", "question": self.questions.get(name, ""), "choices": choices}
            )
        for name, (low, high) in self.ranges.items():
            fields.append(
                {
                    "name": name,
                    "type": "slider",
                    "question": self.questions.get(name, ""),
                    "min": low,
                    "max": high,
                }
            )
        for name, (low, high) in self.numbers.items():
            fields.append(
                {
                    "name": name,
                    "type": "number",
                    "question": self.questions.get(name, ""),
                    "min": low,
                    "max": high,
                }
            )
        for name, minimum in self.texts.items():
            fields.append(
                {
                    "name": name,
                    "type": "text",
                    "question": self.questions.get(name, ""),
                    "min_length": minimum,
                }
            )
        return fields


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.form = StepForm()
        self.in_form = False
        self.capture: str | None = None
        self.buffer: list[str] = []
        self.pending_min: dict[str, int] = {}
        # Visible text, and the text of questions and options.
        self.skip_depth = 0  # inside script/style/aria-hidden subtrees
        self.stack: list[tuple[str, bool]] = []  # (tag, starts a skipped subtree)
        self.lines: list[str] = []
        self.line: list[str] = []
        self.in_main = False
        self.id_to_name: dict[str, str] = {}
        self.label_for: list[tuple[str, str]] = []  # (id, text) of <label for=...>
        self.label: tuple[str | None, list[str]] | None = None  # (for id, text) while in a <label>
        self.choice: tuple[str, str] | None = None  # the radio (name, value) of the open label
        self.legend: list[str] | None = None
        self.fieldset_radios: list[str] | None = None
        self.fieldset_legend = ""
        self.button: list[str] | None = None
        self.progress: list[str] | None = None

    # --- Visible text ------------------------------------------------------------------

    def _newline(self) -> None:
        text = " ".join("".join(self.line).split())
        if text:
            self.lines.append(text)
        self.line = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        hidden = tag in SKIPPED_TAGS or a.get("aria-hidden") == "true" or "hidden" in a
        if tag not in VOID_TAGS:
            self.stack.append((tag, hidden))
            if hidden:
                self.skip_depth += 1
        if tag == "main":
            self.in_main = True
        if tag in BLOCK_TAGS:
            self._newline()
        if tag == "span" and "bar-progress" in classes:
            self.progress = []
        if tag == "h1":
            self.capture, self.buffer = "h1", []
        if tag == "p" and "error" in classes:
            self.capture, self.buffer = "error", []
        if tag == "p" and "counter" in classes and a.get("data-for"):
            self.pending_min[a["data-for"]] = int(a.get("data-min") or 0)
        if tag == "form" and "step-form" in classes:
            self.in_form = True
            self.form.kind = a.get("data-step-kind", "")
        if tag == "fieldset":
            self.fieldset_radios, self.fieldset_legend = [], ""
        if tag == "legend":
            self.legend = []
        if tag == "label":
            self.label = (a.get("for"), [])
        if not self.in_form:
            return
        name = a.get("name")
        if a.get("id") and name:
            self.id_to_name[a["id"]] = name
        if tag == "input" and name:
            kind = a.get("type", "text")
            if kind == "hidden":
                self.form.hidden[name] = a.get("value", "")
            elif kind == "radio":
                self.form.radios.setdefault(name, []).append(a.get("value", ""))
                if self.label is not None:
                    self.choice = (name, a.get("value", ""))
                if self.fieldset_radios is not None and name not in self.fieldset_radios:
                    self.fieldset_radios.append(name)
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
            self.button = []

    def handle_endtag(self, tag):
        if tag == "form" and self.in_form:
            self.in_form = False
        if self.capture == "h1" and tag == "h1":
            self.form.title = "".join(self.buffer).strip()
            self.capture = None
        if self.capture == "error" and tag == "p":
            self.form.errors.append("".join(self.buffer).strip())
            self.capture = None
        if tag == "span" and self.progress is not None:
            self.form.progress = " ".join("".join(self.progress).split())
            self.progress = None
        if tag == "legend" and self.legend is not None:
            self.fieldset_legend = " ".join("".join(self.legend).split())
            self.legend = None
        if tag == "fieldset" and self.fieldset_radios is not None:
            for name in self.fieldset_radios:
                self.form.questions.setdefault(name, self.fieldset_legend)
            self.fieldset_radios = None
        if tag == "label" and self.label is not None:
            target, words = self.label
            text = " ".join("".join(words).split())
            if self.choice is not None:
                name, value = self.choice
                self.form.options.setdefault(name, {})[value] = text
                self.form.labels[value] = text
            elif target:
                self.label_for.append((target, text))
            self.label, self.choice = None, None
        if tag == "button" and self.button is not None:
            self.form.button_labels.append(" ".join("".join(self.button).split()))
            self.button = None
        if tag in BLOCK_TAGS:
            self._newline()
        if tag == "main":
            self.in_main = False
        # Close the matching open element (HTML is forgiving: tolerate strays).
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index][0] == tag:
                for _, hidden in self.stack[index:]:
                    if hidden:
                        self.skip_depth -= 1
                del self.stack[index:]
                break

    def handle_data(self, data):
        if self.capture:
            self.buffer.append(data)
        if self.progress is not None:
            self.progress.append(data)
        if self.skip_depth:
            return
        if self.legend is not None:
            self.legend.append(data)
        if self.label is not None:
            self.label[1].append(data)
        if self.button is not None:
            self.button.append(data)
        if self.in_main:
            self.line.append(data)


def parse_step(html: str) -> StepForm:
    parser = _Parser()
    parser.feed(html)
    parser.close()
    parser._newline()
    form = parser.form
    form.position = form.hidden.get("_position", "")
    form.text = "\n".join(parser.lines)
    for field_id, minimum in parser.pending_min.items():
        name = field_id.removeprefix("id_")
        if name in form.texts:
            form.texts[name] = minimum
    for field_id, text in parser.label_for:
        name = parser.id_to_name.get(field_id)
        if name:
            form.questions.setdefault(name, text)
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


# --- Instructed-response items -------------------------------------------------------------

QUOTES = "'\"‘’“”„‚«»‹›"  # English and German quotation marks and guillemets
QUOTED = f"[{QUOTES}]([^{QUOTES}]{{1,80}})[{QUOTES}]"
INSTRUCTION = re.compile(
    # English: "please select 'Disagree'", "choose the option \"Agree\""
    r"\b(?:select|choose|pick|click|tick|mark|answer|respond(?:\s+with)?|chose)\s+"
    r"(?:(?:the|an?)\s+)?(?:(?:option|answer|response|button)\s+)?" + QUOTED + "|"
    # German: "wählen Sie „Stimme nicht zu“", "bitte klicke auf 'Ja'", "antworten Sie mit »Nein«"
    r"\b(?:wählen|wähle|wählt|auswählen|klicken|klicke|klickt|markieren|markiere|markiert|kreuzen|kreuze"
    r"|antworten|antworte|antwortet)(?:\s+(?:sie|du|bitte|hier|bei\s+dieser\s+frage))*\s+"
    r"(?:(?:mit|auf)\s+)?(?:(?:die|der|den|das)\s+)?(?:(?:option|antwort|antwortmöglichkeit|schaltfläche)\s+)?"
    + QUOTED,
    re.IGNORECASE,
)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def instructed_answer(question: str, options: dict[str, str]) -> str | None:
    """The value of the option an instructed-response item asks for ("please select
    'Disagree'"), matched on the option's label; None when the text instructs nothing (or
    names no option of the item)."""
    found = INSTRUCTION.search(question or "")
    if not found:
        return None
    wanted = _norm(found.group(1) or found.group(2))
    for value, label in options.items():
        if _norm(label) == wanted or _norm(value) == wanted:
            return value
    return None


def instructed_answers(form: StepForm) -> dict[str, str]:
    """Every instructed-response item of the form, answered as instructed."""
    found = {}
    for name, values in form.radios.items():
        options = form.options.get(name) or {v: v for v in values}
        value = instructed_answer(form.questions.get(name, ""), options)
        if value is not None:
            found[name] = value
    return found
