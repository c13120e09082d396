"""Defaults that fail closed: anything but the embedded default runs with DEBUG off unless it
is turned on, a deployment refuses a weak or placeholder SECRET_KEY, and the demo tells how
to show it to others without exposing it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from debates.management.commands.load_demo import exposure_advice
from tests.config.test_settings import GOOD_KEY, ROOT, run

SHOW = "import django; django.setup(); from django.conf import settings as s; print(s.DEBUG)"
PLACEHOLDER = re.search(r"^SECRET_KEY=(.*)$", (ROOT / "docker" / "env.example").read_text(), re.M).group(1)


def settings_of(env: dict) -> tuple[int, str]:
    # The test process's own pytest variables are no deployment's: leave them out.
    result = run({"PYTEST_VERSION": "", "PYTEST_CURRENT_TEST": "", **env}, SHOW)
    return result.returncode, (result.stdout.strip() or result.stderr)


class TestDebug:
    def test_the_embedded_default_runs_with_debug_on(self):
        assert settings_of({}) == (0, "True")

    @pytest.mark.parametrize(
        "env",
        [
            {"DATABASE_URL": "postgres://rostrum@db/rostrum"},
            {"DATABASE_URL": "sqlite:///var/elsewhere.sqlite3"},
            {"ALLOWED_HOSTS": "rostrum.example.org"},
        ],
    )
    def test_a_database_url_or_allowed_hosts_turn_debug_off(self, env):
        assert settings_of({"ALLOWED_HOSTS": "rostrum.example.org", "SECRET_KEY": GOOD_KEY, **env}) == (
            0,
            "False",
        )

    def test_debug_stays_on_when_explicitly_turned_on(self):
        assert settings_of({"DATABASE_URL": "postgres://rostrum@db/rostrum", "DEBUG": "1"}) == (0, "True")

    def test_a_deployment_without_a_secret_key_refuses_to_start_and_says_how_to_make_one(self):
        code, error = settings_of({"DATABASE_URL": "postgres://rostrum@db/rostrum"})
        assert code != 0
        assert "SECRET_KEY must be set when DEBUG is off" in error and "secrets.token_urlsafe" in error


class TestSecretKey:
    def test_the_placeholder_of_docker_env_example_is_refused(self):
        assert len(PLACEHOLDER) >= 50  # long enough: the length rule alone would let it through
        code, error = settings_of({"ALLOWED_HOSTS": "rostrum.example.org", "SECRET_KEY": PLACEHOLDER})
        assert code != 0 and "SECRET_KEY is a placeholder" in error

    def test_the_placeholder_is_refused_with_debug_on_too(self):
        code, error = settings_of({"DEBUG": "1", "SECRET_KEY": PLACEHOLDER})
        assert code != 0 and "SECRET_KEY is a placeholder" in error

    @pytest.mark.parametrize("key", ["a" * 80, "abab" * 20, "django-insecure-" + "x1y2z3w4" * 6])
    def test_a_long_but_weak_key_is_refused(self, key):
        code, error = settings_of({"ALLOWED_HOSTS": "rostrum.example.org", "SECRET_KEY": key})
        assert code != 0 and "SECRET_KEY" in error

    def test_a_short_pseudonym_key_is_refused(self):
        code, error = settings_of(
            {"ALLOWED_HOSTS": "rostrum.example.org", "SECRET_KEY": GOOD_KEY, "PSEUDONYM_KEY": "short"}
        )
        assert code != 0 and "PSEUDONYM_KEY must be at least 32 characters" in error

    def test_the_docker_image_build_key_still_builds(self):
        dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
        key = re.search(r"SECRET_KEY=(\S+)", dockerfile).group(1)
        assert settings_of({"DEBUG": "0", "ALLOWED_HOSTS": "build", "SECRET_KEY": key}) == (0, "False")


class TestDemoExposure:
    def test_the_demo_says_how_to_show_it_to_others_safely(self):
        advice = "\n".join(exposure_advice("http://127.0.0.1:8000"))
        assert "ssh -N -L 8000:127.0.0.1:8000" in advice and "TLS proxy" in advice
        assert "0.0.0.0" not in advice and "WARNING" not in advice

    def test_a_demo_bound_to_every_address_is_warned_about(self):
        advice = "\n".join(exposure_advice("http://0.0.0.0:8080"))
        assert advice.startswith("WARNING") and "never let it answer a network directly" in advice

    def test_the_readme_never_suggests_binding_the_demo_to_every_address(self):
        readme = Path(ROOT / "README.md").read_text()
        assert not re.search(r"HOST=0\.0\.0\.0[^\n]*(make demo|scripts/demo\.sh)", readme)
