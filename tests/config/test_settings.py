"""Settings come from the environment; bad values fail loudly at start-up."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOOD_KEY = "k" * 20 + "-production-secret-key-for-tests-only-0123456789"


def run(env: dict, code: str = "import django; django.setup(); print('ok')") -> subprocess.CompletedProcess:
    # Not the test run's own variables (PYTEST_XDIST_WORKER would move REDIS_URL's database).
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY"} and not k.startswith("PYTEST")
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_embedded_default_needs_no_variables():
    code = (
        "import django; django.setup(); from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.CHANNEL_LAYERS['default']['BACKEND'],"
        " s.CELERY_TASK_ALWAYS_EAGER)"
    )
    result = run({}, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.sqlite3",
        "channels.layers.InMemoryChannelLayer",
        "True",
    ]


def test_database_and_redis_urls_switch_to_production_parts():
    code = (
        "import django; django.setup(); from django.conf import settings as s; d = s.DATABASES['default'];"
        "print(d['ENGINE'], d['NAME'], d['HOST'], d['PORT'], d['CONN_MAX_AGE'], 'pool' in d['OPTIONS'],"
        " s.CHANNEL_LAYERS['default']['BACKEND'], s.CELERY_TASK_ALWAYS_EAGER, s.CELERY_BROKER_URL)"
    )
    result = run(
        {
            "DATABASE_URL": "postgres://u:p@db.example:6543/rostrum",
            "REDIS_URL": "redis://cache:6379/2",
            "DEBUG": "1",
        },
        code,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "common.postgresql",
        "rostrum",
        "db.example",
        "6543",
        "0",
        "True",
        "channels_redis.pubsub.RedisPubSubChannelLayer",
        "False",
        "redis://cache:6379/2",
    ]


@pytest.mark.parametrize(
    "env, message",
    [
        (
            {"DATABASE_URL": "mysql://x/y", "DEBUG": "1"},
            "DATABASE_URL must start with sqlite:/// or postgres://",
        ),
        ({"DATABASE_URL": "postgres://host", "DEBUG": "1"}, "DATABASE_URL must name the database"),
        ({"DATABASE_URL": "postgres://host:port/db", "DEBUG": "1"}, "DATABASE_URL has a bad port"),
        ({"REDIS_URL": "http://localhost"}, "REDIS_URL must start with redis://"),
        ({"DEBUG": "maybe"}, "DEBUG must be a boolean"),
        ({"DEBUG": "0"}, "SECRET_KEY must be set when DEBUG is off"),
        ({"DEBUG": "0", "SECRET_KEY": "short"}, "SECRET_KEY must be at least 50 characters"),
        ({"DEBUG": "0", "SECRET_KEY": GOOD_KEY}, "ALLOWED_HOSTS must be set when DEBUG is off"),
        (
            {"DB_POOL_MAX": "lots", "DATABASE_URL": "postgres://h/db", "DEBUG": "1"},
            "DB_POOL_MAX must be an integer",
        ),
        # Rate limits: malformed, they had failed every request they limit (a 500), not the start.
        ({"API_TOKEN_FAILURE_LIMITS": "20/10m"}, "API_TOKEN_FAILURE_LIMITS must be COUNT/SECONDS windows"),
        ({"ENTRY_RATE_LIMITS": "20/60,lots"}, "ENTRY_RATE_LIMITS must be COUNT/SECONDS windows"),
        ({"PLACE_RATE_LIMITS": "0/60"}, "got '0/60'"),
    ],
)
def test_bad_values_fail_at_start_up(env, message):
    result = run(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_production_settings_pass_the_deployment_checks():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={
            **{
                k: v
                for k, v in os.environ.items()
                if k not in {"DATABASE_URL", "REDIS_URL"} and not k.startswith("PYTEST")
            },
            "DEBUG": "0",
            "SECRET_KEY": GOOD_KEY,
            "ALLOWED_HOSTS": "rostrum.example.org",
            "DATABASE_URL": "postgres://rostrum@db/rostrum",
            "REDIS_URL": "redis://redis:6379/0",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
