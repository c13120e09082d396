"""Django's form renderer, with the plain input and textarea widgets written out in Python.

Measured on the arrivals benchmark (issue #12): rendering a questionnaire's number, text and
slider inputs through Django's widget templates (`input.html` including `attrs.html`, one
template render per widget) was about a seventh of a page's CPU. Those templates are a
line each; here they are the same markup produced by string formatting, and every other
widget template (admin widgets, selects, checkboxes) goes through the templates as before.
`tests/common/test_widgets_html.py` checks the output against the templates themselves.

Settings: `FORM_RENDERER = "common.widgets_html.FastWidgetRenderer"`.
"""

from __future__ import annotations

from django.forms.renderers import DjangoTemplates
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

INPUTS = frozenset(
    {
        "django/forms/widgets/input.html",
        "django/forms/widgets/text.html",
        "django/forms/widgets/number.html",
        "django/forms/widgets/email.html",
        "django/forms/widgets/url.html",
        "django/forms/widgets/password.html",
        "django/forms/widgets/hidden.html",
    }
)
TEXTAREA = "django/forms/widgets/textarea.html"
SLIDER = "participants/widgets/slider.html"


def attrs_html(attrs: dict) -> str:
    """`django/forms/widgets/attrs.html`: ` name="value"` for each attribute, ` name` for
    True, nothing for False; names and values escaped (values as `str()`)."""
    parts = []
    for name, value in attrs.items():
        if value is False:
            continue
        if value is True:
            parts.append(f" {conditional_escape(name)}")
        else:
            parts.append(f' {conditional_escape(name)}="{conditional_escape(str(value))}"')
    return "".join(parts)


def _value_attr(value) -> str:
    return "" if value is None else f' value="{conditional_escape(str(value))}"'


def widget_html(template_name: str, widget: dict) -> str | None:
    """The widget's markup for the templates written out here; None for any other."""
    name = conditional_escape(widget["name"])
    if template_name in INPUTS:
        kind = conditional_escape(widget["type"])
        value = _value_attr(widget["value"])
        return f'<input type="{kind}" name="{name}"{value}{attrs_html(widget["attrs"])}>'
    if template_name == TEXTAREA:
        value = conditional_escape(widget["value"]) if widget["value"] else ""
        return f'<textarea name="{name}"{attrs_html(widget["attrs"])}>\n{value}</textarea>'
    if template_name == SLIDER:
        value = widget["value"]
        shown = " data-untouched" if value is None else _value_attr(value)
        return (
            f'<input type="range" name="{name}"{shown}{attrs_html(widget["attrs"])}>\n'
            f'<input type="hidden" name="{name}__touched" value="{"" if value is None else "1"}">'
        )
    return None


class FastWidgetRenderer(DjangoTemplates):
    """`DjangoTemplates`, except for the widgets `widget_html` knows."""

    def render(self, template_name, context, request=None) -> SafeString | str:
        widget = context.get("widget") if isinstance(context, dict) else None
        if widget is not None:
            html = widget_html(template_name, widget)
            if html is not None:
                return mark_safe(html)  # noqa: S308 - every part above is escaped
        return super().render(template_name, context, request=request)
