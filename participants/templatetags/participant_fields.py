"""`{% step_field field %}`: one questionnaire field of a step page, as markup.

It was the template `participants/_field.html`, included once per field; written out here
it costs a fraction (issue #12: the includes were a fifth of a questionnaire page's CPU on
the arrivals benchmark). `tests/participants/test_step_field.py` keeps the old template and
checks that both give the same page for every kind of field, bound and unbound, with errors.

The markup: a `div.field` (`has-error`, `slider`, `data-show-if` for a "please describe"
box); choice items as a fieldset of radio buttons (a Likert row when `field.layout` says
so); other items as a label, the help text, the widget (Django's, through the form's
renderer), a slider's end labels and value, a text's "at least N characters" counter; then
the errors. Help, slider ends, counter and errors have ids the control's (or the radio
fieldset's) `aria-describedby` names (class Ids).
"""

from __future__ import annotations

from django import template
from django.forms import BoundField
from django.template.defaultfilters import linebreaksbr
from django.utils.html import conditional_escape as esc
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

register = template.Library()


@register.simple_tag
def step_field(field: BoundField) -> SafeString:
    errors = field.errors
    widget = field.field.widget
    is_range = getattr(widget, "input_type", None) == "range"
    show_if = getattr(field.field, "show_if", "")
    out = ['<div class="field', " has-error" if errors else "", " slider" if is_range else "", '"']
    if show_if:
        out.append(f' data-show-if="{esc(show_if)}"')
    out.append(">\n")
    label = linebreaksbr(field.label)
    # Said, or a participant cannot tell they may skip it; not on a box another answer opens
    # ("please describe"), which is required once it shows.
    if not field.field.required and not show_if:
        optional = esc(gettext("(optional)"))
        label = f'{label} <span class="optional">{optional}</span>'
    help_text = field.help_text
    ids = Ids(field)
    if getattr(widget, "input_type", None) == "radio":
        invalid = ' aria-invalid="true"' if errors else ""
        described = ids.described_by(ids.help, ids.error)
        out.append(f"  <fieldset{described}{invalid}>\n    <legend>{label}</legend>\n    ")
        if help_text:
            out.append(f'    <p class="help"{ids.attr(ids.help)}>{esc(help_text)}</p>')
        likert = " likert" if getattr(field.field, "layout", "") == "likert" else ""
        out.append(f'\n    <div class="choices{likert}">\n    ')
        current, name, auto_id = field.value(), esc(field.html_name), esc(field.auto_id)
        required = " required" if field.field.required else ""
        for counter, (value, text) in enumerate(field.field.choices):
            checked = " checked" if current == value else ""
            out.append(
                f'<label class="choice" for="{auto_id}_{counter}"><input type="radio" name="{name}" '
                f'value="{esc(value)}" id="{auto_id}_{counter}"{required}{checked}>'
                f"<span>{esc(text)}</span></label>"
            )
        out.append("\n    </div>\n  </fieldset>\n")
    else:
        for_id = esc(field.id_for_label)
        out.append(f'  <label class="label" for="{for_id}">{label}</label>\n  ')
        if help_text:
            out.append(f'<p class="help"{ids.attr(ids.help)}>{esc(help_text)}</p>')
        out.append("\n  ")
        if is_range:
            ends = getattr(field.field, "end_labels", None) or []
            value = field.value()
            out.append('\n    <div class="range-row">\n      ')
            if ends:
                out.append(f'<span class="range-end"{ids.attr(ids.low)}>{esc(ends[0])}</span>')
            described = ids.joined(ids.help, *((ids.low, ids.high) if ends else ()), ids.error)
            out.append(f"\n      {ids.widget(described)}\n      ")
            if ends:
                out.append(f'<span class="range-end"{ids.attr(ids.high)}>{esc(ends[1])}</span>')
            shown = esc(gettext("Move the slider to answer")) if value is None else esc(value)
            out.append(
                "\n    </div>\n"
                f'    <output class="range-value{" untouched" if value is None else ""}" for="{for_id}" '
                f'aria-live="polite">{shown}</output>\n  '
            )
        else:
            min_length = getattr(field.field, "min_length", None)
            described = ids.joined(ids.help, ids.counter if min_length else None, ids.error)
            out.append(f"\n    {ids.widget(described)}\n    ")
            if min_length:
                at_least = gettext("At least %(min)s characters.") % {"min": esc(min_length)}
                out.append(
                    f'<p class="help counter"{ids.attr(ids.counter)} data-for="{for_id}" '
                    f'data-min="{esc(min_length)}">{at_least}</p>'
                )
            out.append("\n  ")
        out.append("\n")
    if errors:
        out.append(f'<div class="field-errors"{ids.attr(ids.error)}>')
        for error in errors:
            out.append(f'<p class="error">{esc(error)}</p>')
        out.append("</div>")
    out.append("\n</div>")
    return mark_safe("".join(out))  # noqa: S308 - every value above is escaped


class Ids:
    """The ids of a field's help text, slider ends, character counter and errors, and the
    control's `aria-describedby` naming them, so that a screen reader reads them with the
    control (Django's widgets name `<id>_helptext` and `<id>_error` already). None of them
    without an `auto_id`."""

    def __init__(self, field: BoundField) -> None:
        self.field = field
        base = field.auto_id
        self.help = f"{base}_helptext" if base and field.help_text else None
        self.error = f"{base}_error" if base and field.errors else None
        self.low = f"{base}_low" if base else None
        self.high = f"{base}_high" if base else None
        self.counter = f"{base}_counter" if base else None

    @staticmethod
    def attr(value: str | None) -> str:
        return f' id="{esc(value)}"' if value else ""

    @staticmethod
    def joined(*ids: str | None) -> str:
        return " ".join(i for i in ids if i)

    def described_by(self, *ids: str | None) -> str:
        joined = self.joined(*ids)
        return f' aria-describedby="{esc(joined)}"' if joined else ""

    def widget(self, described: str) -> str:
        """The control, described by `described` (Django's own choice when empty)."""
        if not described:
            return str(self.field)
        return self.field.as_widget(attrs={"aria-describedby": described})
