"""Design A: a citation such as [E4] in a turn opens that evidence unit's text where it
stands (a popover, no script), on the dialogue page and in the judgement page's recap; the
turn's text and the evidence are escaped."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from debates.models import DialogueAssignment, Turn
from debates.templatetags.evidence import cited_text
from participants.models import Participant
from tests.support.cast import Walker

EVIDENCE = [
    {"number": 4, "text": 'A letter: the trustees would "regret clinging to it".'},
    {"number": 8, "text": "Wren lit a <b>white</b> candle."},
    {"number": 9, "text": "White wax on the lid."},
]


def test_a_citation_of_a_known_unit_becomes_a_button_opening_its_text():
    html = str(cited_text("He wrote to them [E4].", EVIDENCE, 3))
    assert '<button type="button" class="cite" popovertarget="cite-3-1"' in html
    assert 'aria-label="Show or hide evidence E4">E4</button>' in html  # the name says what it does
    assert '<span class="cite-pop" id="cite-3-1" popover role="note">' in html
    assert "regret clinging to it" in html
    assert html.startswith("<p>He wrote to them [<button") and html.endswith("</span>].</p>")


def test_a_list_of_citations_opens_each_unit_and_an_unknown_unit_stays_text():
    html = str(cited_text("The wax [E8, E9] and the key [E99].", EVIDENCE, 1))
    assert html.count('class="cite"') == 2
    assert 'popovertarget="cite-1-1"' in html and 'popovertarget="cite-1-2"' in html
    assert "[E99]" in html and "E99</button>" not in html


def test_the_turn_and_the_evidence_are_escaped():
    html = str(cited_text('<img src=x onerror="alert(1)"> says [E8]\n\nNext <script>', EVIDENCE, 2))
    assert "<img" not in html and "<script>" not in html and "<b>" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "Wren lit a &lt;b&gt;white&lt;/b&gt; candle." in html
    assert html.count("<p>") == 2  # paragraphs as linebreaks makes them


def test_without_evidence_the_text_is_plain_paragraphs():
    assert str(cited_text("One [E4]\nline two", [], 1)) == "<p>One [E4]<br>line two</p>"
    assert str(cited_text("One [E4]", None, 1)) == "<p>One [E4]</p>"


def reach_dialogue(study) -> tuple[Walker, DialogueAssignment]:
    w = Walker(study, read_seconds=0)
    w.enter()
    w.walk(stop_before="The debate")
    return w, DialogueAssignment.objects.select_related("dialogue__case").get(participant__prolific_pid=w.pid)


def popovers(html: str) -> dict[str, str]:
    """The evidence units a page opens from its citations: popover id → unit tag."""
    return dict(
        re.findall(r'id="(cite-[0-9]+-[0-9]+)" popover role="note"><span class="evidence-tag">(E\d+)', html)
    )


def cited_units(dialogue) -> set[str]:
    return {
        f"E{n}"
        for t in dialogue.turns.all()
        for n in re.findall(r"E(\d+)", " ".join(re.findall(r"\[E[^\]]*\]", t.text)))
    }


@pytest.mark.django_db
def test_the_dialogue_page_opens_every_cited_unit_of_the_case_where_it_is_cited(mystery_study):
    w, a = reach_dialogue(mystery_study)
    html = w.page()[0].content.decode()
    found = popovers(html)
    known = {f"E{e['number']}" for e in a.dialogue.case.evidence}
    assert found and set(found.values()) == cited_units(a.dialogue) & known
    assert len(set(found)) == len(found)  # ids are unique on the page
    unit = a.dialogue.case.evidence[0]
    assert f'<span class="evidence-tag">E{unit["number"]}</span>' in html


@pytest.mark.django_db
def test_the_judgement_pages_recap_opens_the_cited_units_too(mystery_study):
    w, a = reach_dialogue(mystery_study)
    w.page()
    Participant.objects.filter(prolific_pid=w.pid).update(shown_at=timezone.now() - timedelta(seconds=600))
    w.submit({"_active_ms": "400000"})
    w.walk(stop_before="Your judgement", answers={"A quick question": {"attention_1": "Strongly disagree"}})
    response, form = w.page()
    assert form.title == "Your judgement"
    html = response.content.decode()
    assert popovers(html) and 'data-reread="_reread_ms"' in html


@pytest.mark.django_db
def test_markup_in_a_turn_is_shown_as_text_beside_working_citations(mystery_study):
    w, a = reach_dialogue(mystery_study)
    turn = a.dialogue.turns.order_by("number").first()
    Turn.objects.filter(pk=turn.pk).update(text='<img src=x onerror="window.x=1"> [E1] & more')
    html = w.page()[0].content.decode()
    assert '<img src=x onerror="window.x=1">' not in html
    assert "&lt;img src=x onerror=&quot;window.x=1&quot;&gt; [<button" in html
