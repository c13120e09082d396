"""Participant pages in the participant's language: the study's own texts (through
`studies.texts`, in the language `participants.i18n` chose) and the translated interface
strings the page scripts show (JSON in a data attribute, read by the script)."""

from __future__ import annotations

import json

from django import template
from django.utils.html import format_html
from django.utils.translation import get_language, gettext, pgettext

from studies.texts import step_title, study_text, texts_language

register = template.Library()


@register.simple_tag
def study_text_for(study, name: str) -> str:
    """`{% study_text_for study "title" as title %}`: the study's text in the participant's language."""
    return study_text(study, name, texts_language())


@register.simple_tag
def step_title_for(step) -> str:
    """`{% step_title_for step as step_title %}`: the step's title in the participant's language."""
    return step_title(step)


def _step_strings() -> dict[str, str]:
    return {
        "slider_untouched": gettext("Move the slider to answer"),
        "counter_enough": gettext("%(count)s characters — enough."),
        "counter_short": gettext("%(count)s of at least %(min)s characters."),
        "limit": gettext("This box holds at most %(max)s characters: anything beyond that was not kept."),
    }


def _live_strings() -> dict[str, str]:
    return {
        "name_A": gettext("Debater A"),
        "name_B": gettext("Debater B"),
        "name_C": gettext("AI advisor"),
        "name_J": pgettext("speaker", "You"),
        "argues_true": gettext(" — argues the claim is TRUE"),
        "argues_false": gettext(" — argues the claim is FALSE"),
        "you_passed": gettext("You passed"),
        "you_both": gettext("You → both debaters"),
        "you_advisor": gettext("You → the advisor"),
        "you_debater": gettext("You → Debater %(side)s"),
        "round": gettext("Round %(round)s"),
        "no_reply": gettext("(no reply)"),
        "said": gettext(
            # Translators: a finished turn read out once by a screen reader, e.g. "Debater A, Round 2: …"
            "%(name)s, %(when)s: %(text)s"
        ),
        "lost": gettext("Connection lost — reconnecting…"),
        "ai_failed": gettext(
            "The AI could not reply just now. You can try again, or go on to your final answer."
        ),
        "writing": gettext("%(name)s is writing…"),
        "over": gettext("The conversation is over. Continue to your final answer."),
        "sending": gettext("Sending…"),
        "your_turn": gettext("Your turn: ask a question, or pass."),
        "title_your_turn": pgettext("page title", "Your turn"),
        "about_to_reply": gettext("%(name)s is about to reply…"),
        "continue_below": gettext("Scroll to the Continue button ↓"),
        "new_below": gettext("Scroll to the new text ↓"),
        "write_first": gettext("Write a question first, or pass."),
        "closed": gettext("This conversation is no longer open. Reload the page to continue."),
    }


def _persuasion_strings() -> dict[str, str]:
    return {
        "minutes": gettext("%(n)s minutes"),
        "seconds": gettext("%(n)s seconds"),
        "hint": gettext("One to %(max)s sentences."),
        "so_far_one": gettext("About one sentence so far."),
        "so_far": gettext("About %(n)s sentences so far."),
        "you": pgettext("speaker", "You"),
        "opponent": gettext("Your opponent"),
        "not_a_move": gettext("not a move"),
        "did_not_count": gettext("Did not count: %(reason)s"),
        "turn": gettext("Turn %(n)s"),
        "said": gettext(
            # Translators: a finished turn read out once by a screen reader, e.g. "Debater A, Round 2: …"
            "%(name)s, %(when)s: %(text)s"
        ),
        "reading_turn": gettext("Reading the moves in this turn…"),
        "reply_before": gettext("their %(kind)s "),
        "reply_after": gettext(" with: %(replies)s"),
        "lost": gettext("Connection lost — reconnecting…"),
        "waiting_room": gettext("Waiting for another participant to join (at most %(wait)s)…"),
        "sending": gettext("Sending…"),
        "reading_yours": gettext("Reading the moves in your turn…"),
        "reading_theirs": gettext("Reading the moves in your opponent's turn…"),
        "opponent_writing": gettext("Your opponent is writing…"),
        "your_turn": gettext("Your turn (turn %(n)s of at most %(max)s, both sides counted)."),
        "reply_soon": gettext("Your turn: reply within %(n)s seconds, or the dialogue ends."),
        "title_your_turn": pgettext("page title", "Your turn"),
        "waiting": gettext("Waiting for your opponent…"),
        "write_one": gettext("Write at least one sentence."),
        "closed": gettext("This dialogue is no longer open here. Reload the page to continue."),
        "move_claim": pgettext("persuasion move", "claim"),
        "move_why": pgettext("persuasion move", "why"),
        "move_concede": pgettext("persuasion move", "concede"),
        "move_retract": pgettext("persuasion move", "retract"),
        "move_since": pgettext("persuasion move", "since"),
        "move_question": pgettext("persuasion move", "question"),
    }


UI_STRINGS = {"step": _step_strings, "live": _live_strings, "persuasion": _persuasion_strings}


@register.simple_tag
def ui_strings(name: str) -> str:
    """`<div hidden id="ui-NAME" data-strings="{…}">`: the strings a page script shows, in the
    active language, as JSON in an attribute (participant pages allow no inline script, not
    even a data block); the script falls back to English without it. Made once per process,
    group and language (the catalogs do not change while the server runs)."""
    key = (name, get_language())
    html = _ui_html.get(key)
    if html is None:
        strings = json.dumps(UI_STRINGS[name]())
        html = _ui_html[key] = format_html('<div hidden id="ui-{}" data-strings="{}"></div>', name, strings)
    return html


_ui_html: dict[tuple[str, str | None], str] = {}
