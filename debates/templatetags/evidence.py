"""Design A's turn text with its citations made readable where they stand.

`{% cited_text turn.text case.evidence turn.number %}` renders the turn as paragraphs (as
`linebreaks` does) and each citation of a known evidence unit ([E4], or [E8, E9]) as a
button that opens that unit's text in a popover: HTML only, no script, so it works under
the pages' strict CSP. A browser without popovers shows the text inline in its place.
Everything from the turn and the case is escaped here: the markup is built from escaped
pieces, never from the raw text.
"""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

register = template.Library()

CITATION = re.compile(r"\[(E\d+(?:\s*,\s*E\d+)*)\]")
UNIT = re.compile(r"E(\d+)")
PARAGRAPHS = re.compile(r"\n{2,}")


def evidence_texts(evidence) -> dict[int, str]:
    texts = {}
    for unit in evidence or []:
        try:
            texts[int(unit["number"])] = str(unit["text"])
        except (KeyError, TypeError, ValueError):
            continue
    return texts


def _unit(number: int, text: str, ident: str) -> str:
    return format_html(
        '<button type="button" class="cite" popovertarget="{id}" aria-label="{label}">E{n}</button>'
        '<span class="cite-pop" id="{id}" popover role="note">'
        '<span class="evidence-tag">E{n}</span> {text} '
        '<button type="button" class="cite-close" popovertarget="{id}" popovertargetaction="hide">'
        "{close}</button>"
        "</span>",
        id=ident,
        n=number,
        text=text,
        # In the participant's language (the German page said "Evidence E4" and "Close").
        label=gettext("Show or hide evidence E%(number)s") % {"number": number},  # says what it does
        close=gettext("Close"),
    )


def _citations(line: str, texts: dict[int, str], prefix: str, counter: list[int]) -> str:
    out, last = [], 0
    for match in CITATION.finditer(line):
        out.append(escape(line[last : match.start()]))
        parts = []
        for unit in re.split(r"(\s*,\s*)", match.group(1)):
            found = UNIT.fullmatch(unit)
            if found and int(found.group(1)) in texts:
                counter[0] += 1
                number = int(found.group(1))
                parts.append(_unit(number, texts[number], f"{prefix}-{counter[0]}"))
            else:
                parts.append(escape(unit))
        out.append("[" + "".join(parts) + "]")
        last = match.end()
    out.append(escape(line[last:]))
    return "".join(out)


@register.simple_tag
def cited_text(text: str, evidence, key: object = "") -> SafeString:
    """The turn's text as paragraphs, its citations of `evidence` opening the unit's text.
    `key` (the turn's number) keeps the popovers' ids apart on a page."""
    texts = evidence_texts(evidence)
    prefix = f"cite-{escape(key)}"
    counter = [0]
    paragraphs = PARAGRAPHS.split(str(text or "").replace("\r\n", "\n").replace("\r", "\n").strip())
    html = []
    for paragraph in paragraphs:
        lines = [_citations(line, texts, prefix, counter) for line in paragraph.split("\n")]
        html.append("<p>" + "<br>".join(lines) + "</p>")
    return mark_safe("\n\n".join(html))  # noqa: S308 (every piece above was escaped or format_html'd)
