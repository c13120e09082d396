"""Hostile HTTP clients against the real server (uvicorn as production starts it, on raw
sockets): stalled and trickled bodies, oversized bodies, header blocks and header counts.

A stalled body must not hold one of the places that serve pages (config.admission), a
trickled body or head must time out, and what is too large is refused early."""

from __future__ import annotations

import re
import select
import socket
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest

from tests.support.cast import PASSWORD, experimenter_user
from tests.support.servers import asgi_server

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PLACES = 2  # HTTP_CONCURRENCY of the servers below
SMALL = {
    "HTTP_CONCURRENCY": str(PLACES),
    "HTTP_MAX_BODY_BYTES": "65536",
    "HTTP_MAX_HEADERS": "40",
    "HTTP_MAX_HEADER_BYTES": "8192",
    "DJANGO_ALLOW_ASYNC_UNSAFE": "",
}


@pytest.fixture(scope="module")
def server(django_db_setup) -> Iterator[str]:
    """Patient with slow clients (a minute), so only a held place could block a page."""
    with asgi_server(HTTP_BODY_TIMEOUT_SECONDS="60", HTTP_HEADER_TIMEOUT_SECONDS="60", **SMALL) as base:
        yield base


@pytest.fixture(scope="module")
def impatient_server(django_db_setup) -> Iterator[str]:
    with asgi_server(HTTP_BODY_TIMEOUT_SECONDS="1", HTTP_HEADER_TIMEOUT_SECONDS="1", **SMALL) as base:
        yield base


def connect(base: str) -> socket.socket:
    url = urllib.parse.urlsplit(base)
    # The timeout only keeps a broken server from hanging the suite; nothing is timed.
    return socket.create_connection((url.hostname, url.port), timeout=20)


def head(method: str, path: str, *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response: status, headers (lower-cased names) and body, read to its length or EOF."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed before a response: {data!r}")
        data += chunk
    raw_head, body = data.split(b"\r\n\r\n", 1)
    status_line, *lines = raw_head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), value.strip())
    length = int(headers.get("content-length", "-1"))
    while length < 0 or len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(status_line.split()[1]), headers, body


def send_all(sock: socket.socket, data: bytes) -> None:
    """Send what the server accepts: it may refuse and close before it has read everything."""
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def get(base: str, path: str, *headers: str) -> tuple[int, dict[str, str], bytes]:
    with connect(base) as sock:
        sock.sendall(head("GET", path, *headers))
        return read_response(sock)


def stalled_post(base: str, path: str, length: int, *headers: str) -> socket.socket:
    sock = connect(base)
    sock.sendall(head("POST", path, f"Content-Length: {length}", *headers) + b"x" * 10)
    return sock


@pytest.fixture(scope="module")
def split_server(django_db_setup) -> Iterator[str]:
    """The admin's limit (1.5 MB) above the public one (300 KB), and a process that holds at
    most 1 MiB of bodies at once."""
    settings = {**SMALL, "HTTP_MAX_BODY_BYTES": "1500000", "HTTP_MAX_PUBLIC_BODY_BYTES": "300000"}
    with asgi_server(HTTP_BODY_TIMEOUT_SECONDS="60", HTTP_MAX_BODY_BYTES_HELD="1048576", **settings) as base:
        yield base


def signed_in(base: str) -> str:
    """The Cookie header of an experimenter signed in to the admin."""
    experimenter_user()
    with httpx.Client(base_url=base, timeout=20) as client:
        page = client.get("/admin/login/").text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        fields = {"csrfmiddlewaretoken": token, "username": "experimenter", "password": PASSWORD}
        assert client.post("/admin/login/?next=/admin/", data=fields).status_code == 302
        return "Cookie: " + "; ".join(f"{name}={value}" for name, value in client.cookies.items())


def post_body(base: str, path: str, size: int, *headers: str) -> tuple[int, dict[str, str], bytes]:
    with connect(base) as sock:
        send_all(sock, head("POST", path, f"Content-Length: {size}", *headers) + b"x" * size)
        return read_response(sock)


class TestLargeBodies:
    def test_only_a_signed_in_staff_session_sends_the_admin_a_large_body(self, split_server):
        # Anyone: refused by Content-Length, before the body is sent, and told to sign in.
        with stalled_post(split_server, "/admin/debates/import/", 400_000) as sock:
            status, _, text = read_response(sock)
        assert status == 413 and b"Sign in to the admin again" in text
        # A made-up session is no better.
        made_up = "Cookie: sessionid=" + "s" * 32
        status, _, _ = post_body(split_server, "/admin/debates/import/", 400_000, made_up)
        assert status == 413
        # A signed-in experimenter's body is read whole: Django answers (the CSRF check, as
        # the body is no form), where anyone else got 413.
        cookies = signed_in(split_server)
        status, _, _ = post_body(split_server, "/admin/debates/import/", 400_000, cookies)
        assert status == 403
        # The admin's own limit still holds for staff.
        status, _, text = post_body(split_server, "/admin/debates/import/", 1_600_000, cookies)
        assert status == 413 and b"limit of" in text and b"Sign in" not in text

    def test_uploads_that_stall_cannot_fill_the_memory_but_pages_are_served(self, split_server):
        """Four anonymous bodies of 290 KB stalled a byte short of their end would hold
        1.16 MB: past the process's 1 MiB, the body that would pass it is refused with 503,
        while a participant-sized post and a staff member's import are served."""
        cookies = signed_in(split_server)
        with ExitStack() as stack:
            stalled = []
            for _ in range(4):
                sock = stack.enter_context(connect(split_server))
                send_all(sock, head("POST", "/no/such/page", "Content-Length: 290000") + b"x" * 289_999)
                stalled.append(sock)
            refused = []
            deadline = time.monotonic() + 10
            while not refused and time.monotonic() < deadline:
                readable, _, _ = select.select(stalled, [], [], 0.2)
                for sock in readable:
                    status, headers, _ = read_response(sock)
                    refused.append((status, headers.get("retry-after")))
            assert refused and all(answer == (503, "30") for answer in refused), refused
            assert post_body(split_server, "/admin/login/", 2000)[0] == 403  # read, then CSRF
            assert post_body(split_server, "/admin/debates/import/", 400_000, cookies)[0] == 403
            assert get(split_server, "/healthz")[0] == 200


class TestSlowClients:
    def test_bodies_that_stall_hold_no_place_that_serves_pages(self, server):
        with ExitStack() as stack:
            for _ in range(PLACES * 4):
                stack.enter_context(stalled_post(server, "/admin/login/", 1000))
            status, _, body = get(server, "/healthz")
            assert (status, body) == (200, b"ok")

    def test_a_body_sent_in_pieces_with_pauses_reaches_the_view_whole(self, server):
        experimenter_user()
        status, headers, page = get(server, "/admin/login/")
        cookie = headers["set-cookie"].split(";")[0]
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
        fields = {"csrfmiddlewaretoken": token, "username": "experimenter", "password": PASSWORD}
        form = urllib.parse.urlencode({**fields, "next": "/admin/"}).encode()
        with ExitStack() as stack:
            # Another client stalls meanwhile on each place.
            for _ in range(PLACES):
                stack.enter_context(stalled_post(server, "/admin/login/", 1000))
            with connect(server) as sock:
                sock.sendall(
                    head(
                        "POST",
                        "/admin/login/",
                        f"Cookie: {cookie}",
                        "Content-Type: application/x-www-form-urlencoded",
                        "Transfer-Encoding: chunked",
                    )
                )
                for start in range(0, len(form), 16):
                    piece = form[start : start + 16]
                    sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sock.sendall(b"0\r\n\r\n")
                status, headers, _ = read_response(sock)
        assert status == 302 and headers["location"] == "/admin/"

    def test_a_body_that_trickles_in_times_out_with_408(self, impatient_server):
        with stalled_post(impatient_server, "/admin/login/", 1000) as sock:
            status, headers, _ = read_response(sock)
            assert status == 408 and headers["connection"] == "close"
            assert sock.recv(1) == b""  # and the connection is closed

    def test_headers_that_trickle_in_time_out_with_408(self, impatient_server):
        with connect(impatient_server) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            status, _, _ = read_response(sock)
            assert status == 408
            assert sock.recv(1) == b""


class TestSizes:
    def test_a_body_announced_too_large_is_refused_before_it_is_sent(self, server):
        with stalled_post(server, "/admin/login/", 1024**3) as sock:
            status, headers, _ = read_response(sock)
            assert status == 413 and headers["connection"] == "close"

    def test_a_chunked_body_is_refused_once_it_passes_the_limit(self, server):
        with connect(server) as sock:
            sock.sendall(head("POST", "/admin/login/", "Transfer-Encoding: chunked"))
            chunk = b"%x\r\n%s\r\n" % (16384, b"x" * 16384)
            for _ in range(5):  # 80 KiB, over the 64 KiB limit; the rest is never sent
                send_all(sock, chunk)
            status, _, _ = read_response(sock)
            assert status == 413

    def test_a_body_within_the_limit_is_served(self, server):
        with connect(server) as sock:
            sock.sendall(head("POST", "/admin/login/", "Content-Length: 60000") + b"x" * 60000)
            status, _, _ = read_response(sock)
            assert status == 403  # CSRF: the body was read and Django answered

    def test_form_data_in_another_charset_is_a_400_not_an_error_page_that_fails(self, server):
        kind = "Content-Type: application/x-www-form-urlencoded"
        for form in (
            [f"{kind}; charset=utf-16"],
            [f"{kind}; charset=utf-8; charset=latin-1"],  # Django reads the last
            [f"{kind}; charset=utf-8", f"{kind}; charset=latin-1"],  # and joins two headers
        ):
            for path in ("/admin/login/", "/p/" + "t" * 20 + "/", "/no/such/page"):
                with connect(server) as sock:
                    cookie = "Cookie: csrftoken=" + "c" * 32
                    sock.sendall(head("POST", path, *form, cookie, "Content-Length: 3") + b"a=b")
                    status, _, _ = read_response(sock)
                assert status == 400, (form, path)

    def test_too_many_headers_are_refused_with_431(self, server):
        many = [f"X-Junk-{n}: {n}" for n in range(200)]
        with connect(server) as sock:
            send_all(sock, head("GET", "/healthz", *many))
            status, _, _ = read_response(sock)
        assert status == 431

    def test_a_huge_header_block_is_refused_with_431_while_it_arrives(self, server):
        with connect(server) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
            for _ in range(128):  # 8 MiB, of which the server reads little before refusing
                send_all(sock, b"a" * 65536)
            status, _, _ = read_response(sock)
        assert status == 431

    def test_a_huge_request_target_is_refused_with_414(self, server):
        with connect(server) as sock:
            send_all(sock, head("GET", "/healthz?" + "a" * 20000))
            status, _, _ = read_response(sock)
        assert status == 414

    def test_ordinary_requests_with_cookies_and_headers_are_served(self, server):
        status, _, body = get(
            server,
            "/healthz",
            "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126",
            "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "Accept-Language: en-GB,en;q=0.9",
            "Cookie: csrftoken=" + "c" * 32 + "; sessionid=" + "s" * 32,
        )
        assert (status, body) == (200, b"ok")

    def test_the_server_does_not_name_itself(self, server):
        """uvicorn sent `server: uvicorn` on every response (production starts it with
        --no-server-header, as these servers are)."""
        status, headers, _ = get(server, "/healthz")
        assert status == 200 and "server" not in headers
