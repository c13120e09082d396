"""The participant's language: chosen once at entry, kept for the whole session.

At the study link the language is `&lang=` when the study offers it, else the first of the
browser's languages (Accept-Language, in its order of preference) the study offers, else
the study's own. When the study offers a choice it is stored on the participant the first
time they enter and never changes afterwards (empty: the study's own language).
`ParticipantLanguage` activates it for the entry and preview pages, and the step view
(`participants.views.step`) for the current step and the exit from the participant it has
loaded anyway (no query of its own), with Django's catalogs for the interface and
`studies.texts` for the study's own texts; every other page (the admin) stays in English.
A study's offered languages are read with the study row and kept with it (`study_cached`),
and a one-language study's entry reads nothing more.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from django.utils import translation
from django.utils.translation.trans_real import parse_accept_lang_header

from participants.models import Participant
from participants.services import LOOSE_ID
from studies.services import study_cached
from studies.texts import study_languages, texts_in

LANG_PARAM = "lang"
ENTRY_VIEWS = {"enter", "preview"}
ENTRY_PREFIX = "/s/"  # the study link and the preview; /p/ (steps) the view activates itself


def _primary(code: str) -> str:
    return code.strip().lower().replace("_", "-").split("-")[0]


def entry_language(*, offered: list[str], requested: str = "", accept: str = "") -> str:
    """The language a participant takes the study in. `offered` are the study's languages,
    its own first; `requested` is the link's `lang`; `accept` the Accept-Language header."""
    if _primary(requested) in offered:
        return _primary(requested)
    for code, _quality in parse_accept_lang_header(accept or ""):
        if _primary(code) in offered:
            return _primary(code)
    return offered[0]


@contextmanager
def participant_language(language: str, study_language: str) -> Iterator[None]:
    """Participant pages in `language` (interface and study texts), for the block's duration."""
    previous = translation.get_language()
    translation.activate(language)
    try:
        with texts_in(language, study_language):
            yield
    finally:
        translation.activate(previous) if previous else translation.deactivate()


def _known(language: str) -> bool:
    return language in {code for code, _name in settings.LANGUAGES}


class ParticipantLanguage:
    """Participant pages in the participant's language; the language stored at entry."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(ENTRY_PREFIX):
            return self.get_response(request)
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return self.get_response(request)
        if match.url_name not in ENTRY_VIEWS:  # the step view activates its participant's
            return self.get_response(request)
        language, study_language, store = _entering(request, match.kwargs.get("slug", ""))
        if not language:
            return self.get_response(request)
        with participant_language(language, study_language):
            response = self.get_response(request)
        if store and response.status_code in (301, 302, 303):
            _store(response, language)
        return response


def language_of(participant: Participant) -> tuple[str, str]:
    """(the participant's language, the study's), from the participant and its study."""
    study_language = participant.study.language
    language = participant.language
    return (language if language and _known(language) else study_language), study_language


def offered_languages(study) -> list[str]:
    """The study's languages, its own first, read once per study row (the row is cached)."""
    offered = getattr(study, "_offered_languages", None)
    if offered is None:
        offered = [code for code in study_languages(study) if _known(code)] or [study.language]
        study._offered_languages = offered
    return offered


def _entering(request: HttpRequest, slug: str) -> tuple[str, str, bool]:
    """The entrant's language, the study's, and whether to store it: only when the study
    offers a choice (an empty language is the study's own; the languages are frozen once
    participants enter), so a one-language study's entry writes nothing more."""
    study = study_cached(slug=slug)
    if study is None:
        return "", "", False
    offered = offered_languages(study)
    if len(offered) == 1:
        return offered[0], study.language, False
    pid = (request.GET.get("PROLIFIC_PID") or "").strip()
    if LOOSE_ID.match(pid):  # else the entry refuses the link (a NUL was a database error)
        known = (
            Participant.objects.filter(study=study, prolific_pid__in={pid, pid.lower()})
            .exclude(language="")
            .values_list("language", flat=True)
            .first()
        )
        if known and _known(known):
            return known, study.language, False  # fixed at the first entry
    requested = request.GET.get(LANG_PARAM) or ""
    accept = request.headers.get("Accept-Language", "")
    language = entry_language(offered=offered, requested=requested, accept=accept)
    return language, study.language, len(offered) > 1


def _store(response: HttpResponse, language: str) -> None:
    """Keep the language on the participant the entry redirected to, unless already set."""
    try:
        match = resolve(urlsplit(response.get("Location", "")).path)
    except Resolver404:
        return
    if match.url_name == "step":
        Participant.objects.filter(token=match.kwargs.get("token", ""), language="").update(language=language)
