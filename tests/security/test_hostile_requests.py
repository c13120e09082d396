"""Requests a probe of the running server turned into 500s (each with a traceback in the
log): a NUL in a participant's token or PROLIFIC_PID, a websocket on a path with no route,
an admin username longer than axes can store, page numbers the API could not slice by. Each
gets a plain refusal now, and nothing is stored."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from axes.models import AccessAttempt
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from config.asgi import application
from participants.models import Participant
from studies.texts import study_languages
from tests.support.cast import PASSWORD, experimenter_user, user_with_password
from tests.support.ws import ASGIWebsocket

pytestmark = pytest.mark.django_db


def test_a_nul_in_a_participants_token_is_no_such_page():
    client = Client()
    assert client.get("/p/%00/").status_code == 404
    assert client.post("/p/ab%00cd/", {"x": "1"}).status_code in (403, 404)  # CSRF first, or no page


def test_a_nul_in_the_prolific_id_of_a_study_in_two_languages_is_a_bad_link(mystery_study):
    assert len(study_languages(mystery_study)) > 1  # the entry looks the PID up for its language
    response = Client().get(f"/s/{mystery_study.slug}/?PROLIFIC_PID=%00&STUDY_ID={'a' * 24}&SESSION_ID=x")
    assert response.status_code == 400
    assert not Participant.objects.exists()


@pytest.mark.parametrize("path", ["/ws/nothing/", "/healthz", "/ws/live/abc"])  # the last: no slash
def test_a_websocket_on_a_path_with_no_route_is_refused(path):
    async def handshake():
        socket = ASGIWebsocket(application, path)
        return await socket.connect()

    accepted, _ = async_to_sync(handshake)()
    assert not accepted


@pytest.mark.postgres  # SQLite does not enforce the column's length
def test_an_admin_username_too_long_to_store_is_a_wrong_login_and_is_counted():
    experimenter_user()
    client = Client(enforce_csrf_checks=False)
    response = client.post("/admin/login/?next=/admin/", {"username": "u" * 300, "password": PASSWORD})
    assert response.status_code == 200  # the login page again, with its error
    assert AccessAttempt.objects.get().username == "u" * 150


@pytest.mark.parametrize("page", ["\u00b2", "922337203685477581", "9" * 23, "9" * 5000, "-1", "1.0", " 1"])
def test_api_page_numbers_it_cannot_use_are_refused_with_a_reason(mystery_study, page):
    analyst = user_with_password("analyst", is_staff=True, is_superuser=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=analyst).key}")
    for name in ("page", "page_size"):
        response = client.get(f"/api/v1/studies/{mystery_study.slug}/tables/participants/", {name: page})
        assert response.status_code == 400, (name, page, response.status_code)
        assert "whole number" in response.json()[name]
