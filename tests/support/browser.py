"""Browser tests' shared parts: headless Chromium (Debian's) driven by Playwright against
uvicorn on the test database, an offline stand-in for app.prolific.com, and a participant's
hands (click a label, move a slider, submit). Loaded as a pytest plugin by the conftest.

Set ROSTRUM_SCREENSHOTS=/some/dir to keep a screenshot of every page the tests visit.
"""

from __future__ import annotations

import http.server
import os
import re
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.support.cast import PASSWORD
from tests.support.servers import asgi_server, quiet_database

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PROLIFIC_DONE = "https://app.prolific.com/submissions/complete?cc="
SCREENSHOTS = os.environ.get("ROSTRUM_SCREENSHOTS", "")


# --- Fixtures ----------------------------------------------------------------------------


class ProlificStandIn(http.server.ThreadingHTTPServer):
    """app.prolific.com, offline: an HTTPS server on loopback that records each URL visited.

    Chromium resolves app.prolific.com to it (--host-resolver-rules), so the server's real
    303 redirect is followed by the browser, under the page's real CSP. (Playwright's
    page.route() cannot stand in here: it does not intercept the hops of a redirect, and
    the request then fails with ERR_NAME_NOT_RESOLVED.)
    """

    daemon_threads = True

    def __init__(self, cert_dir: Path) -> None:
        super().__init__(("127.0.0.1", 0), ProlificPage)
        self.visits: list[str] = []
        key, cert = cert_dir / "key.pem", cert_dir / "cert.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
            + ["-nodes", "-days", "1", "-subj", "/CN=app.prolific.com"]
            + ["-addext", "subjectAltName=DNS:app.prolific.com", "-keyout", str(key), "-out", str(cert)],
            check=True,
            capture_output=True,
        )
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        self.socket = tls.wrap_socket(self.socket, server_side=True)

    @property
    def port(self) -> int:
        return self.server_address[1]


class ProlificPage(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        if self.path == "/favicon.ico":
            self.send_error(404)
            return
        self.server.visits.append(f"https://{self.headers['Host']}{self.path}")
        body = b"<!doctype html><title>Prolific</title><h1>Prolific stand-in</h1>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def prolific_stand_in(tmp_path_factory) -> Iterator[ProlificStandIn]:
    stand_in = ProlificStandIn(tmp_path_factory.mktemp("prolific-tls"))
    thread = threading.Thread(target=stand_in.serve_forever, daemon=True)
    thread.start()
    yield stand_in
    stand_in.shutdown()
    stand_in.server_close()
    thread.join(5)


@pytest.fixture
def prolific(prolific_stand_in) -> ProlificStandIn:
    """The stand-in, with this test's visits only."""
    prolific_stand_in.visits.clear()
    return prolific_stand_in


@pytest.fixture(scope="module")
def server(django_db_setup) -> Iterator[str]:
    """uvicorn on the test database; data must be committed (transactional_db) to be seen."""
    # The server must never inherit the test process's async-unsafe escape hatch below.
    # Each test rebuilds the demo study under the same slug: the server must not serve a
    # study row cached from the previous test (STUDY_CACHE_SECONDS keeps it 5 s by default).
    with asgi_server(DJANGO_ALLOW_ASYNC_UNSAFE="", STUDY_CACHE_SECONDS="0") as base:
        yield base


@pytest.fixture(scope="module")
def browser(server, prolific_stand_in) -> Iterator[Browser]:
    # Playwright's sync API keeps an asyncio loop running in this thread, which makes Django
    # refuse ORM calls from the test ("async context"). Nothing runs concurrently with the
    # test code here, so the documented escape hatch is safe, and only for this process:
    # the server above was started before it was set.
    rules = f"--host-resolver-rules=MAP app.prolific.com 127.0.0.1:{prolific_stand_in.port}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, rules])
            yield chromium
            chromium.close()


def new_context(browser: Browser, **options) -> BrowserContext:
    # The stand-in's certificate is self-signed; every other page is plain http on loopback.
    context = browser.new_context(ignore_https_errors=True, **options)
    context.set_default_timeout(10_000)
    return context


@pytest.fixture
def context(transactional_db, browser) -> Iterator[BrowserContext]:
    # Requesting transactional_db here closes the browser context before the tables are
    # flushed, so no request is in flight during the flush.
    context = new_context(browser)
    yield context
    context.close()
    quiet_database()  # nor a write the closed pages set off


# --- A participant's hands ---------------------------------------------------------------


def signed_in(context: BrowserContext, base: str, username: str = "experimenter") -> Page:
    """A new page of `context`, signed in to the admin at `base` (a user `experimenter_user` made)."""
    page = context.new_page()
    page.goto(f"{base}/admin/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    return page


def heading(page: Page) -> str:
    return page.locator("h1").inner_text().strip()


def submit(page: Page, button: str) -> None:
    """Click a submit button and wait for the page the server sends back."""
    with page.expect_navigation():
        page.get_by_role("button", name=button, exact=True).click()


def choose(page: Page, question: str, option: str) -> None:
    """Click the label of `option` inside the question whose legend contains `question`."""
    group = page.get_by_role("group", name=question)
    group.locator("label.choice").filter(has_text=re.compile(rf"^\s*{re.escape(option)}\s*$")).click()
    expect(group.get_by_role("radio", name=option, exact=True)).to_be_checked()


def slide_to(page: Page, label: str, value: int) -> None:
    """Move a 0–100 slider with the keyboard: End, then ArrowLeft down to `value`."""
    slider = page.get_by_role("slider", name=label)
    slider.focus()
    page.keyboard.press("End")
    for _ in range(100 - value):
        page.keyboard.press("ArrowLeft")
    expect(slider).to_have_value(str(value))
    expect(page.locator(f'output[for="{slider.get_attribute("id")}"]')).to_have_text(str(value))


def screenshot(page: Page, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)
