"""The pages a participant meets when an address leads nowhere (404) or the server fails
(500): in the study pages' style and the participant's language, not Django's bare English
"Not Found" / "Server Error (500)" (the accessibility audit found the bare page on a
mistyped study link)."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from django.utils import translation

from participants.views import server_error

pytestmark = pytest.mark.django_db


def test_an_unknown_study_link_gets_a_page_that_says_what_to_do(client):
    response = client.get("/s/no-such-study/?PROLIFIC_PID=" + "a" * 24)
    page = response.content.decode()
    assert response.status_code == 404
    assert "<h1>Page not found</h1>" in page and "go back to Prolific" in page
    assert '<html lang="en">' in page and "css/rostrum" in page


def test_the_not_found_page_is_in_the_browsers_language(client):
    response = client.get("/s/no-such-study/", HTTP_ACCEPT_LANGUAGE="de")
    page = response.content.decode()
    assert response.status_code == 404
    assert "<h1>Seite nicht gefunden</h1>" in page and '<html lang="de">' in page


def test_the_address_asked_for_is_not_shown_back(client):
    response = client.get("/p/<script>alert(1)</script>/")
    assert response.status_code == 404
    assert b"<script>alert" not in response.content


def test_a_server_error_says_earlier_answers_are_kept_and_what_to_do():
    """In the browser's language: the step view's own was unwound with the exception, so
    Django's handler gave German participants the English page (the review)."""
    request = RequestFactory().get("/p/token/", HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")
    with translation.override("en"):  # as after the step view's language is gone
        response = server_error(request)
    page = response.content.decode()
    assert response.status_code == 500
    assert "<h1>Etwas ist schiefgelaufen</h1>" in page and "vorherigen Seiten sind gespeichert" in page


def test_django_uses_these_pages():
    from django.urls import get_resolver

    from participants.views import not_found

    resolver = get_resolver()
    assert resolver.resolve_error_handler(404) is not_found
    assert resolver.resolve_error_handler(500) is server_error


def test_with_debug_on_as_in_the_demo_participants_still_get_their_page(settings):
    """The demo runs with DEBUG on, where Django answers a bad link with its developer page
    listing every URL pattern (a generic participant's walk found it); the admin keeps it."""
    from django.test import Client

    settings.DEBUG = True
    if "participants.error_pages.ParticipantNotFoundPage" not in settings.MIDDLEWARE:
        settings.MIDDLEWARE = ["participants.error_pages.ParticipantNotFoundPage", *settings.MIDDLEWARE]
    client = Client()
    for path in ("/p/not-a-token/", "/s/no-such-study/?PROLIFIC_PID=" + "a" * 24, "/nowhere"):
        response = client.get(path)
        page = response.content.decode()
        assert response.status_code == 404, path
        assert "<h1>Page not found</h1>" in page and "URLconf" not in page, path
    admin = client.get("/admin/no-such-page/")
    assert admin.status_code in (302, 404)  # the login first, or Django's page for developers
    api = client.get("/api/v1/no-such-thing/")
    assert api.status_code in (401, 403, 404) and "Page not found</h1>" not in api.content.decode()
