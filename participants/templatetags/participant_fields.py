"""`{% step_field field %}`: one questionnaire field of a step page, as markup.

It was the template `participants/_field.html`, included once per field; written out here
it costs a fraction (issue #12: the includes were a fifth of a questionnaire page's CPU on
the arrivals benchmark). `tests/participants/test_step_field.py` keeps the old template and
checks that both give the same page for every kind of field, bound and unbound, with errors.

The markup: a `div.field` (`has-error`, `slider`, `data-show-if` for a "please describe"
box); choice items as a fieldset of radio buttons (a Likert row when `field.layout` says
so); other items as a label, the help text, the widget (Django's, through the form's
renderer), a slider's end labels and value, a text's "at least N characters" counter; then
the errors.
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
    help_text = field.help_text
    if getattr(widget, "input_type", None) == "radio":
        invalid = ' aria-invalid="true"' if errors else ""
        out.append(f"  <fieldset{invalid}>\n    <legend>{label}</legend>\n    ")
        if help_text:
            out.append(f'    <p class="help">{esc(help_text)}</p>')
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
            out.append(f'<p class="help" id="{esc(field.auto_id)}_help">{esc(help_text)}</p>')
        out.append("\n  ")
        if is_range:
            ends = getattr(field.field, "end_labels", None) or []
            value = field.value()
            out.append('\n    <div class="range-row">\n      ')
            if ends:
                out.append(f'<span class="range-end">{esc(ends[0])}</span>')
            out.append(f"\n      {field}\n      ")
            if ends:
                out.append(f'<span class="range-end">{esc(ends[1])}</span>')
            shown = esc(gettext("Move the slider to answer")) if value is None else esc(value)
            out.append(
                "\n    </div>\n"
                f'    <output class="range-value{" untouched" if value is None else ""}" for="{for_id}" '
                f'aria-live="polite">{shown}</output>\n  '
            )
        else:
            out.append(f"\n    {field}\n    ")
            min_length = getattr(field.field, "min_length", None)
            if min_length:
                at_least = gettext("At least %(min)s characters.") % {"min": esc(min_length)}
                out.append(
                    f'<p class="help counter" data-for="{for_id}" data-min="{esc(min_length)}">{at_least}</p>'
                )
            out.append("\n  ")
        out.append("\n")
    for error in errors:
        out.append(f'<p class="error">{esc(error)}</p>')
    out.append("\n</div>")
    return mark_safe("".join(out))  # noqa: S308 - every value above is escaped
