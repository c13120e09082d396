"""Fixtures of the whole suite: the cast, the studies they take part in, and the markers that
choose what runs on SQLite, PostgreSQL and Redis (the helpers are in `tests/support/`)."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from debates.demo import loader
from studies.models import Study
from studies.services import _steps_cache, _study_cache
from tests.support.cast import (
    Walker,
    experimenter_user,
    logged_in,
    outsider_user,
    staff_user_without_permissions,
)
from tests.support.studies import QUESTIONNAIRE_STEPS, build_study

pytest_plugins = ["tests.support.browser"]


# Fixtures through which a test reaches the database (pytest-django refuses any other way).
DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_setup",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
    }
)


def reaches_a_backend(item) -> bool:
    """Whether a test can behave differently on PostgreSQL/Redis than on the embedded default:
    it uses the database, or is marked as needing a service or a browser."""
    if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    return any(mark in item.keywords for mark in ("postgres", "redis", "browser", "embedded", "backends"))


def pytest_collection_modifyitems(config, items):
    """Tests marked postgres/redis are skipped unless the run is on PostgreSQL/Redis.

    With TESTS_BACKEND_ONLY=1 (the second phase of scripts/test.sh), tests that reach no
    database, service or browser are skipped: they ran in the embedded phase and cannot
    behave differently here."""
    import os

    from django.conf import settings

    on_postgres = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
    on_redis = bool(settings.REDIS_URL)
    backend_only = os.environ.get("TESTS_BACKEND_ONLY") == "1"
    for item in items:
        if backend_only and not reaches_a_backend(item):
            item.add_marker(pytest.mark.skip(reason="reaches no backend: ran in the embedded phase"))
            continue
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL (DATABASE_URL)"))
        if "redis" in item.keywords and not on_redis:
            item.add_marker(pytest.mark.skip(reason="needs Redis (REDIS_URL)"))
        if "sqlite" in item.keywords and on_postgres:
            item.add_marker(pytest.mark.skip(reason="exercises the SQLite default"))
        if "embedded" in item.keywords and on_redis:
            item.add_marker(pytest.mark.skip(reason="in-process layer only; Redis has its own"))


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test databases, with the sessions still open on them ended before they
    are dropped: a thread of this process that reached the database on its own connection
    (sync_to_async's, a live writer's) keeps it until the process ends, and PostgreSQL refuses
    to drop a database in use ("being accessed by other users", a warning at the end of the
    run, and the database left behind)."""
    yield
    from django.db import connections

    with django_db_blocker.unblock():
        for alias in connections:
            if connections[alias].vendor != "postgresql":
                continue
            with connections[alias].cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    " AND backend_type = 'client backend' AND usename = current_user"
                )


@pytest.fixture(autouse=True)
def _instant_offline_model(settings):
    """The offline model writes without pausing between words (the demo pauses)."""
    settings.LLM_OFFLINE_TOKEN_DELAY_MS = 0
    # Frames 10 ms apart instead of the browser's 100: each reply's last frame waits for its
    # interval, and hundreds of turns are written in process (tests/debates/live/
    # test_frame_rate.py keeps the promised rate).
    settings.LIVE_FLUSH_MS = 10
    settings.LIVE_MAX_FRAMES_PER_SECOND = 100
    # Turn writers run their ORM calls in the test's own thread, inside its transaction.
    settings.LIVE_DB_THREADS = 0


@pytest.fixture(autouse=True)
def _no_address_limits(settings):
    """Every walker arrives from 127.0.0.1: the per-address limits on entries and places are
    off unless a test turns them on (tests/security); so are the count of wrong API tokens and
    the limit on admin login attempts."""
    settings.ENTRY_RATE_LIMITS = []
    settings.PLACE_RATE_LIMITS = []
    settings.API_TOKEN_FAILURE_LIMITS = []
    settings.ADMIN_LOGIN_RATE_LIMITS = []


@pytest.fixture
def one_rate_window(monkeypatch):
    """The rate limits' clock stopped in the middle of the current minute: the limits count
    in fixed windows (a limit of 6 a minute lets 12 through across a minute's end), so a test
    counting against one must not straddle a window's end."""
    from types import SimpleNamespace

    from common import limits

    stopped = int(time.time() // 60) * 60 + 30.0
    monkeypatch.setattr(limits, "time", SimpleNamespace(time=lambda: stopped))


@pytest.fixture(autouse=True)
def _fresh_caches():
    _steps_cache.clear()
    _study_cache.clear()
    yield
    _steps_cache.clear()
    _study_cache.clear()


# --- The cast ----------------------------------------------------------------------------


@pytest.fixture
def experimenter(db) -> Client:
    """The admin as the experimenter (a superuser) sees it."""
    return logged_in(experimenter_user())


@pytest.fixture
def staff_without_permissions(db) -> Client:
    return logged_in(staff_user_without_permissions())


@pytest.fixture
def outsider(db) -> Client:
    return logged_in(outsider_user())


@pytest.fixture
def walker_for():
    return Walker


# --- Studies -----------------------------------------------------------------------------


@pytest.fixture
def questionnaire_study(db) -> Study:
    """consent → three questionnaire pages (the second: two attention checks) → debrief."""
    return build_study(QUESTIONNAIRE_STEPS, attention_failures_to_end=2)


@pytest.fixture
def mystery_study(db) -> Study:
    """The demo's design-A study."""
    return loader.mystery_study()


@pytest.fixture
def claim_study(db) -> Study:
    """The demo's design-B study."""
    return loader.claim_study()


@pytest.fixture
def pairs_study(db) -> Study:
    """The demo's design-D study."""
    return loader.pairs_study()
