"""Wrong API tokens are counted per client address: past API_TOKEN_FAILURE_LIMITS the address
is answered 429 with Retry-After and its tokens, right or wrong, are not looked up until the
window ends; other addresses and requests with a right token under the limit are untouched."""

from __future__ import annotations

import secrets

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

STUDIES = "/api/v1/studies/"


@pytest.fixture(autouse=True)
def limits_on(settings, one_rate_window):
    settings.API_TOKEN_FAILURE_LIMITS = ["3/60"]
    if not settings.REDIS_URL:
        cache.clear()


@pytest.fixture
def token() -> str:
    analyst = User.objects.create_user("analyst", password="x", is_staff=True)
    return Token.objects.create(user=analyst).key


def address() -> str:
    return f"203.0.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"


def client_at(ip: str, key: str | None) -> APIClient:
    client = APIClient(REMOTE_ADDR=ip)
    if key is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def wrong() -> str:
    return secrets.token_hex(20)


def test_wrong_tokens_from_one_address_are_refused_after_the_limit_right_ones_too(token, caplog):
    ip = address()
    assert [client_at(ip, wrong()).get(STUDIES).status_code for _ in range(3)] == [401, 401, 401]
    said = [r.getMessage() for r in caplog.records if r.name == "analysis.api_auth"]
    assert said == [f"API tokens from {ip} refused for 31 s: too many wrong ones"]
    refused = client_at(ip, wrong()).get(STUDIES)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 61
    assert "wrong tokens" in refused.json()["detail"]
    # A right token from that address is not even looked up: a guesser learns nothing.
    with CaptureQueriesContext(connection) as queries:
        assert client_at(ip, token).get(STUDIES).status_code == 429
    assert not [q for q in queries.captured_queries if "authtoken" in q["sql"]]


def test_other_addresses_and_right_tokens_are_not_counted(token):
    busy, other = address(), address()
    for _ in range(3):
        assert client_at(busy, wrong()).get(STUDIES).status_code == 401
    assert client_at(other, token).get(STUDIES).status_code == 200
    assert client_at(other, wrong()).get(STUDIES).status_code == 401  # its first wrong one
    calm = address()
    for _ in range(10):  # an analyst's script with its right token, however often
        assert client_at(calm, token).get(STUDIES).status_code == 200
    assert client_at(calm, None).get(STUDIES).status_code == 401  # no token: nothing to count
    assert client_at(calm, wrong()).get(STUDIES).status_code == 401


def test_the_limit_ends_with_its_window(token, monkeypatch):
    from types import SimpleNamespace

    from common import limits

    ip = address()
    for _ in range(4):
        client_at(ip, wrong()).get(STUDIES)
    assert client_at(ip, token).get(STUDIES).status_code == 429
    later = limits.time.time() + 60
    monkeypatch.setattr(limits, "time", SimpleNamespace(time=lambda: later))
    assert client_at(ip, token).get(STUDIES).status_code == 200


def test_off_means_no_count(settings, token):
    settings.API_TOKEN_FAILURE_LIMITS = ["off"]
    ip = address()
    assert {client_at(ip, wrong()).get(STUDIES).status_code for _ in range(6)} == {401}
    assert client_at(ip, token).get(STUDIES).status_code == 200
