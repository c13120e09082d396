"""A login attempt hashes the password it is given (PBKDF2, for unknown usernames too). It ran
on the one thread that serves every page of a server process, so a client posting logins held
participants' pages back by seconds (the hostile-traffic probe: p90 3.4 s at 16 posters).
Password checks now run on threads of their own (config.admission, config.asgi), and pages
are served while a hash runs."""

from __future__ import annotations

import re
import threading
import time

import httpx
import pytest

from tests.support.servers import asgi_server

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_pages_are_served_while_a_login_attempt_hashes_its_password(django_db_setup):
    with asgi_server(DJANGO_SETTINGS_MODULE="tests.support.slow_hash_settings") as base:
        login = httpx.Client(base_url=base, timeout=120)
        form = login.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        done: dict[str, float] = {}
        answer: dict[str, httpx.Response] = {}

        def attempt() -> None:
            data = {"csrfmiddlewaretoken": token, "username": "nobody", "password": "guess"}
            done["sent"] = time.monotonic()
            answer["login"] = login.post("/admin/login/", data=data)
            done["login"] = time.monotonic()

        hashing = threading.Thread(target=attempt)
        hashing.start()
        time.sleep(0.5)  # the attempt is in: its password is being hashed for seconds
        with httpx.Client(base_url=base, timeout=120) as pages:
            for _ in range(3):
                assert pages.get("/healthz").status_code == 200
        done["pages"] = time.monotonic()
        hashing.join()
        login.close()
    # The wrong login was checked and answered (the login page again), after the pages.
    assert answer["login"].status_code == 200
    assert "Please enter the correct username and password" in answer["login"].text
    # The hash took seconds, and the pages were done well before it was: served meanwhile, not
    # before it began (they were asked for half a second into it).
    assert done["login"] - done["sent"] > 2
    assert done["login"] - done["pages"] > 1
