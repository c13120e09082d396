"""The admin under attack: a password guessed over and over is locked out (django-axes), the
admin can be limited to some networks, and its pages carry a CSP and refuse to be framed."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.cache import cache
from django.test import Client

from tests.support.cast import PASSWORD, entry_url, experimenter_user

LOGIN = "/admin/login/?next=/admin/"


def log_in(client: Client, password: str, username: str = "experimenter", address: str = "192.0.2.10"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Dozens of logins: a cheap hasher keeps the module fast (the throttle is what is tested)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.mark.django_db
class TestLoginThrottle:
    @pytest.fixture(autouse=True)
    def _experimenter(self, db):
        experimenter_user()

    def test_thirty_wrong_passwords_lock_the_login_at_the_fifth(self):
        client = Client()
        statuses = [log_in(client, f"guess-{n}").status_code for n in range(30)]
        assert statuses[:4] == [200] * 4  # the login page again, with its error
        assert statuses[4:] == [429] * 26  # locked: the lockout page, the password never tried

    def test_a_locked_login_refuses_even_the_right_password_and_says_why(self):
        client = Client()
        for n in range(5):
            log_in(client, f"guess-{n}")
        response = log_in(client, PASSWORD)
        page = response.content.decode()
        assert response.status_code == 429
        assert "Too many failed logins" in page and "15 minutes" in page
        assert "_auth_user_id" not in client.session

    def test_the_lock_holds_one_username_from_one_address_only(self):
        for n in range(5):
            log_in(Client(), f"guess-{n}")
        assert log_in(Client(), PASSWORD, address="198.51.100.7").status_code == 302
        experimenter_user("colleague")
        assert log_in(Client(), PASSWORD, username="colleague").status_code == 302

    def test_the_lock_ends_after_the_cooling_off_time(self):
        for n in range(5):
            log_in(Client(), f"guess-{n}")
        self.wait(minutes=16)
        assert log_in(Client(), PASSWORD).status_code == 302

    def test_each_try_during_the_lock_starts_the_wait_again(self):
        for n in range(5):
            log_in(Client(), f"guess-{n}")
        self.wait(minutes=10)
        assert log_in(Client(), "guess-again").status_code == 429
        self.wait(minutes=10)
        assert log_in(Client(), PASSWORD).status_code == 429

    def wait(self, minutes: int) -> None:
        attempt = AccessAttempt.objects.get()
        AccessAttempt.objects.update(attempt_time=attempt.attempt_time - timedelta(minutes=minutes))

    def test_a_login_sent_elsewhere_by_its_next_lands_on_the_admin(self):
        """A next= on another host is not followed (no open redirect), and the login then went to
        /accounts/profile/, a 404 (the hostile-traffic probe)."""
        client = Client()
        response = client.post(
            "/admin/login/?next=https://evil.example/",
            {"username": "experimenter", "password": PASSWORD},
            REMOTE_ADDR="192.0.2.11",
        )
        assert response.status_code == 302 and response["Location"] == "/admin/"
        assert client.get(response["Location"]).status_code == 200

    def test_a_successful_login_clears_the_failures_before_it(self):
        for n in range(4):
            log_in(Client(), f"guess-{n}")
        assert log_in(Client(), PASSWORD).status_code == 302
        for n in range(4):
            assert log_in(Client(), f"again-{n}").status_code == 200


@pytest.mark.django_db
class TestLoginAttemptsPerAddress:
    """Axes locks a username from an address; a client trying a new username each time was never
    locked, and every try hashed a password (~0.25 s of CPU on the thread serving pages).
    Every test's addresses are fresh: with Redis the counters outlive a test (and a run)."""

    @pytest.fixture(autouse=True)
    def _limited(self, db, settings, one_rate_window):
        settings.ADMIN_LOGIN_RATE_LIMITS = ["10/60"]
        if not settings.REDIS_URL:
            cache.clear()
        experimenter_user()

    def test_past_the_limit_an_address_is_refused_before_any_password_is_checked(self):
        here, elsewhere = fresh_ipv4(), fresh_ipv4()
        statuses = [log_in(Client(), "guess", f"user-{n}", here).status_code for n in range(10)]
        assert statuses == [200] * 10  # the login page again: wrong usernames, each checked
        client = Client()
        response = log_in(client, PASSWORD, address=here)  # the right password, not checked
        assert response.status_code == 429 and int(response["Retry-After"]) >= 1
        assert "Too many login attempts from your address" in response.content.decode()
        assert "_auth_user_id" not in client.session
        assert not AccessAttempt.objects.filter(username="experimenter").exists()
        # Another address logs in; pages other than the login's POST are never counted.
        assert log_in(Client(), PASSWORD, address=elsewhere).status_code == 302
        assert Client().get(LOGIN, REMOTE_ADDR=here).status_code == 200

    def test_cross_site_posts_refused_by_the_csrf_check_are_not_counted(self):
        """A page anyone behind the experimenter's address opens could post forms at the login:
        refused by the CSRF check, they must not use up the address's attempts."""
        here, forged = fresh_ipv4(), Client(enforce_csrf_checks=True)
        statuses = [log_in(forged, "guess", f"user-{n}", here).status_code for n in range(12)]
        assert statuses == [403] * 12
        assert log_in(Client(), PASSWORD, address=here).status_code == 302

    def test_an_ipv6_subscriber_is_one_address_for_the_limit_and_for_the_lockout(self, settings):
        block, other = fresh_ipv6_block(), fresh_ipv6_block()
        for n in range(10):
            log_in(Client(), "guess", f"user-{n}", f"{block}{n + 1:x}")
        assert log_in(Client(), PASSWORD, address=f"{block}99").status_code == 429
        settings.ADMIN_LOGIN_RATE_LIMITS = []
        AccessAttempt.objects.all().delete()
        for n in range(5):  # five wrong passwords, each from another address of the block
            log_in(Client(), f"guess-{n}", address=f"{block}{n + 1:x}")
        assert log_in(Client(), PASSWORD, address=f"{block}99").status_code == 429  # locked
        assert AccessAttempt.objects.get().ip_address == block
        assert log_in(Client(), PASSWORD, address=f"{other}1").status_code == 302


def fresh_ipv4() -> str:
    return f"198.51.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"


def fresh_ipv6_block() -> str:
    """A /64 of the documentation range, as "2001:db8:x:y::" (its first address)."""
    return f"2001:db8:{secrets.randbelow(0xFFFF) + 1:x}:{secrets.randbelow(0xFFFF) + 1:x}::"


@pytest.mark.django_db
class TestAdminNetworks:
    def test_outside_the_allowed_networks_the_admin_does_not_exist(self, settings, experimenter):
        settings.ADMIN_ALLOWED_NETWORKS = ["10.0.0.0/8", "192.0.2.7"]
        assert experimenter.get("/admin/", REMOTE_ADDR="203.0.113.5").status_code == 404
        assert Client().get(LOGIN, REMOTE_ADDR="203.0.113.5").status_code == 404
        assert experimenter.get("/admin/", REMOTE_ADDR="10.1.2.3").status_code == 200
        assert experimenter.get("/admin/", REMOTE_ADDR="192.0.2.7").status_code == 200

    def test_participant_pages_are_not_limited(self, settings, questionnaire_study):
        settings.ADMIN_ALLOWED_NETWORKS = ["10.0.0.0/8"]
        assert Client().get(entry_url(questionnaire_study), REMOTE_ADDR="203.0.113.5").status_code == 302

    def test_without_the_setting_the_admin_answers_everyone(self, experimenter):
        assert experimenter.get("/admin/", REMOTE_ADDR="203.0.113.5").status_code == 200


@pytest.mark.django_db
class TestAdminHeaders:
    @pytest.mark.parametrize("path", ["/admin/", "/admin/studies/study/", "/admin/studies/study/add/"])
    def test_admin_pages_carry_a_csp_without_inline_scripts_and_refuse_framing(self, experimenter, path):
        self.assert_strict(experimenter.get(path))

    def test_the_login_page_too(self):
        self.assert_strict(Client().get(LOGIN))

    def assert_strict(self, response):
        csp = response["Content-Security-Policy"]
        assert response.status_code == 200
        assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp
        assert response["X-Frame-Options"] == "DENY"

    def test_the_study_overview_needs_no_inline_script(self, experimenter, questionnaire_study):
        response = experimenter.get(f"/admin/studies/study/{questionnaire_study.pk}/overview/")
        assert response.status_code == 200
        assert "<script>" not in response.content.decode()
        assert "script-src 'self';" in response["Content-Security-Policy"]

    def test_participant_pages_keep_their_own_stricter_policy(self, questionnaire_study):
        client = Client()
        page = client.get(client.get(entry_url(questionnaire_study))["Location"])
        assert "style-src 'self';" in page["Content-Security-Policy"]

    def test_the_icon_the_admins_pages_make_browsers_ask_for_is_served(self, settings, experimenter):
        """The admin names no icon, so browsers ask for /favicon.ico: a 404 there was the one
        console error of a researcher's walk. Served to anyone, even where the admin is limited
        to some networks (it says nothing), with the same headers as every page."""
        settings.ADMIN_ALLOWED_NETWORKS = ["10.0.0.0/8"]
        response = Client().get("/favicon.ico", REMOTE_ADDR="192.0.2.10")
        assert response.status_code == 200 and response["Content-Type"] == "image/vnd.microsoft.icon"
        assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO file's header
        assert "max-age" in response["Cache-Control"] and response["X-Frame-Options"] == "DENY"
        assert Client().post("/favicon.ico").status_code == 405
