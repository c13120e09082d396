"""config.limits at the ASGI level (the real server's behaviour is in test_http_limits.py):
what reaches the application, and what is refused before it."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from config.limits import SMALL_BODY_BYTES, Limits, RequestLimits, too_large

LIMITS = Limits(max_headers=10, max_header_bytes=2048, max_body_bytes=1000, body_timeout_s=0.05)
CHUNKED = [(b"transfer-encoding", b"chunked")]


class Application:
    """The application behind the limits: records the request it was given."""

    def __init__(self) -> None:
        self.calls = 0
        self.messages: list[dict] = []

    async def __call__(self, scope, receive, send) -> None:
        self.calls += 1
        self.messages.append(await receive())
        self.messages.append(await receive())  # after the body: the client's disconnect
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def serve(
    messages: list[dict],
    headers: list[tuple[bytes, bytes]] = CHUNKED,
    app=None,
    wait_forever=False,
    path: str = "/",
    limits: Limits = LIMITS,
    large_body_allowed=None,
    root_path: str = "",
    query: bytes = b"",
):
    """Run one request through RequestLimits; returns (status, application, messages not read)."""
    app = app or Application()
    pending = list(messages)
    sent: list[dict] = []

    async def receive():
        if pending:
            return pending.pop(0)
        if wait_forever:
            await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": root_path,
    }
    middleware = RequestLimits(app, limits, large_body_allowed=large_body_allowed)
    asyncio.run(middleware({**scope, "headers": list(headers)}, receive, send))
    assert middleware.held == 0  # whatever happened, the bytes held are given back
    return sent[0]["status"], app, pending


def body(data: bytes, more: bool = False) -> dict:
    return {"type": "http.request", "body": data, "more_body": more}


def test_a_body_in_pieces_reaches_the_application_whole_and_once():
    status, app, _ = serve([body(b"a=1&", more=True), body(b"b=2", more=True), body(b"")])
    assert status == 200
    assert app.messages == [body(b"a=1&b=2"), {"type": "http.disconnect"}]


def test_a_chunked_body_past_the_limit_is_refused_before_the_rest_is_read():
    status, app, unread = serve([body(b"x" * 600, more=True), body(b"x" * 600, more=True), body(b"x")])
    assert (status, app.calls, len(unread)) == (413, 0, 1)


def test_outside_the_admin_bodies_have_the_smaller_limit():
    """Only the admin's imports send large files: anywhere else an anonymous client's body,
    held in memory while it arrives, may be a fifth as large."""
    limits = replace(LIMITS, max_public_body_bytes=400)
    for path in ("/", "/p/token/", "/s/study/", "/prolific/webhook/", "/api/v1/studies/"):
        status, app, unread = serve(
            [body(b"x" * 300, more=True), body(b"x" * 300), body(b"")], path=path, limits=limits
        )
        assert (status, app.calls, len(unread)) == (413, 0, 1), path
        announced = [(b"content-length", b"600")]
        assert serve([body(b"x" * 600)], headers=announced, path=path, limits=limits)[0] == 413
    status, app, _ = serve(
        [body(b"x" * 300, more=True), body(b"x" * 300)], path="/admin/studies/import/", limits=limits
    )
    assert (status, app.calls) == (200, 1)
    assert "limit of 400 bytes" in too_large(limits.public())


class SessionCheck:
    """large_body_allowed: records the requests it was asked about."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def __call__(self, scope) -> bool:
        self.asked.append(scope["path"])
        return self.answer


def test_the_admin_takes_a_large_body_only_from_a_staff_session():
    """The admin's larger limit was decided by the path alone, so anyone could send 10 MiB
    there: now only a request whose session the check accepts reads past the public limit,
    and the check is asked once, only of such bodies."""
    limits = replace(LIMITS, max_public_body_bytes=400)
    pieces = [body(b"x" * 300, more=True), body(b"x" * 300, more=True), body(b"x" * 300)]
    path = "/admin/studies/import/"

    staff = SessionCheck(True)
    status, app, _ = serve(pieces, path=path, limits=limits, large_body_allowed=staff)
    assert (status, app.calls, app.messages[0]["body"], staff.asked) == (200, 1, b"x" * 900, [path])

    anonymous = SessionCheck(False)
    status, app, unread = serve(pieces, path=path, limits=limits, large_body_allowed=anonymous)
    assert (status, app.calls, len(unread), anonymous.asked) == (413, 0, 1, [path])

    # Announced by Content-Length: asked before a byte is read; refused unread.
    announced = [(b"content-length", b"900")]
    asked = SessionCheck(False)
    status, app, unread = serve(pieces, headers=announced, path=path, limits=limits, large_body_allowed=asked)
    assert (status, app.calls, len(unread), asked.asked) == (413, 0, 3, [path])

    # Past the admin's own limit, staff too are refused; a small body never asks.
    staff = SessionCheck(True)
    too_much = [body(b"x" * 600, more=True), body(b"x" * 600)]
    assert serve(too_much, path=path, limits=limits, large_body_allowed=staff)[0] == 413
    small = SessionCheck(True)
    assert serve([body(b"x" * 300)], path=path, limits=limits, large_body_allowed=small)[0] == 200
    assert small.asked == []
    # Outside the admin a staff session changes nothing.
    staff = SessionCheck(True)
    assert serve(pieces, path="/api/v1/studies/", limits=limits, large_body_allowed=staff)[0] == 413
    assert staff.asked == []


def test_the_refusal_of_a_signed_out_admin_upload_says_to_sign_in():
    limits = replace(LIMITS, max_public_body_bytes=400)
    assert too_large(limits.public(), signed_out=True) == (
        "Content Too Large: the request is over this server's limit of 400 bytes for requests that do "
        "not come from a signed-in staff account (HTTP_MAX_PUBLIC_BODY_BYTES). "
        "Sign in to the admin again, then send the file."
    )


def test_paths_are_compared_without_the_servers_root_path():
    """Behind a proxy that mounts Rostrum under a prefix (uvicorn --root-path), the scope's
    path starts with that prefix: the admin's pages were taken for public ones (and the
    login lane matched no path)."""
    limits = replace(LIMITS, max_public_body_bytes=400)
    pieces = [body(b"x" * 300, more=True), body(b"x" * 300)]
    status, _, _ = serve(pieces, path="/study/admin/studies/import/", root_path="/study", limits=limits)
    assert status == 200
    status, _, _ = serve(pieces, path="/study/p/token/", root_path="/study", limits=limits)
    assert status == 413


def test_bodies_held_at_once_are_capped_but_small_and_staff_bodies_pass():
    """Many anonymous uploads at once filled the process's memory, 2 MiB each: past the cap,
    a body larger than SMALL_BODY_BYTES is refused with 503 and Retry-After. A participant's
    page of answers (small) and a staff member's import are not."""
    big = SMALL_BODY_BYTES + 1000
    limits = Limits(
        max_headers=10,
        max_header_bytes=2048,
        max_body_bytes=10 * big,
        body_timeout_s=5,
        max_public_body_bytes=2 * big,
        max_bytes_held=2 * big,
    )

    async def scenario():
        app = Application()

        async def staff_only_at_import(scope) -> bool:  # the import page's poster is signed in
            return scope["path"] == "/admin/import/"

        middleware = RequestLimits(app, limits, large_body_allowed=staff_only_at_import)
        release = asyncio.Event()
        statuses: dict[str, int] = {}

        async def request(name, path, pieces, stall=False):
            sent: list[dict] = []
            queue = list(pieces)

            async def receive():
                if queue:
                    return queue.pop(0)
                if stall:
                    await release.wait()
                return {"type": "http.disconnect"}

            scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode()}
            await middleware({**scope, "query_string": b"", "headers": CHUNKED}, receive, send_to(sent))
            statuses[name] = sent[0]["status"] if sent else None
            if sent and sent[0]["status"] == 503:
                assert (b"retry-after", b"30") in sent[0]["headers"]

        def send_to(sent):
            async def send(message):
                sent.append(message)

            return send

        # Two anonymous uploads stall one byte short of their end: the process holds 2 * big - 2.
        short = [body(b"x" * (big - 1), more=True)]
        stalled = [asyncio.create_task(request(f"stalled-{n}", "/p/token/", short, True)) for n in range(2)]
        await asyncio.sleep(0.01)
        assert middleware.held == 2 * (big - 1)
        await request("third", "/p/token/", [body(b"x" * big)])
        await request("participant", "/p/token/", [body(b"x" * 2000)])
        await request("staff", "/admin/import/", [body(b"x" * (3 * big), more=True), body(b"")])
        # Below the public limit too: a staff import is checked when the cap would refuse it
        # (it was refused: the session was asked only past the public limit; the review).
        await request("staff-small", "/admin/import/", [body(b"x" * big)])
        await request("anonymous-admin", "/admin/other/", [body(b"x" * big)])
        release.set()
        await asyncio.gather(*stalled)
        assert middleware.held == 0
        return statuses

    statuses = asyncio.run(scenario())
    assert statuses == {
        "third": 503,
        "participant": 200,
        "staff": 200,
        "staff-small": 200,
        "anonymous-admin": 503,
        "stalled-0": None,
        "stalled-1": None,
    }


def test_a_body_announced_too_large_is_refused_without_reading_it():
    status, app, unread = serve([body(b"x" * 10)], headers=[(b"content-length", b"1000000000")])
    assert (status, app.calls, len(unread)) == (413, 0, 1)


def test_the_refusal_of_a_body_too_large_says_the_limit():
    """A researcher uploading too large a file read a bare 'Content Too Large.'"""
    assert too_large(LIMITS) == (
        "Content Too Large: the request is over this server's limit of 1000 bytes (HTTP_MAX_BODY_BYTES). "
        "Go back and send a smaller file."
    )
    assert "limit of 10 MB" in too_large(Limits(10, 2048, 10 * 1024 * 1024, 1.0))


def test_a_body_that_never_ends_is_refused_with_408():
    status, app, _ = serve([body(b"x", more=True)], wait_forever=True)
    assert (status, app.calls) == (408, 0)


def test_too_many_or_too_large_headers_are_refused_with_431():
    many = [(b"x-junk-%d" % n, b"1") for n in range(11)]
    large = [(b"cookie", b"c" * 3000)]
    assert serve([body(b"")], headers=many)[0] == 431
    assert serve([body(b"")], headers=large)[0] == 431


def test_a_nul_character_in_the_query_string_is_refused_with_400():
    """An admin list filtered with ?status__exact=%00 was a database error, a 500, on eight lists
    (PostgreSQL takes no NUL in text; the hostile-traffic probe)."""
    for query in (b"status__exact=%00", b"q=a%00b", b"x=\x00"):
        status, app, _ = serve([body(b"")], path="/admin/participants/participant/", query=query)
        assert status == 400 and not app.messages
    assert serve([body(b"")], query=b"status__exact=completed&q=%2500")[0] == 200  # "%00" typed: fine


def test_a_client_gone_before_its_body_ended_never_reaches_the_application():
    sent: list[dict] = []
    app = Application()
    messages = [body(b"x", more=True), {"type": "http.disconnect"}]

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "headers": CHUNKED,
    }
    asyncio.run(RequestLimits(app, LIMITS)(scope, receive, send))
    assert (sent, app.calls) == ([], 0)


def test_a_request_without_a_body_goes_straight_to_the_application():
    status, app, _ = serve([body(b"")], headers=[(b"host", b"example.org")])
    assert status == 200 and app.messages == [body(b""), {"type": "http.disconnect"}]


def test_websockets_pass_through_untouched():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(RequestLimits(app, LIMITS)({"type": "websocket", "headers": []}, None, None))
    assert seen == ["websocket"]


def test_form_data_that_names_a_charset_other_than_utf8_is_refused_with_400():
    """Django refuses it only when it reads the form, and its own error pages read the form
    again (the CSRF token): the refusal escaped as a 500 with a long traceback, from anyone."""
    for charset in ("utf-16", "utf8", "iso-8859-1", '"utf-7"'):
        form = [(b"content-type", b"application/x-www-form-urlencoded; charset=" + charset.encode())]
        status, app, _ = serve([body(b"a=b")], headers=[*form, (b"content-length", b"3")])
        assert (status, app.calls) == (400, 0), charset
    for fine in (b"application/x-www-form-urlencoded", b"application/x-www-form-urlencoded; charset=UTF-8"):
        status, app, _ = serve([body(b"a=b")], headers=[(b"content-type", fine), (b"content-length", b"3")])
        assert (status, app.calls) == (200, 1), fine
    other = [(b"content-type", b"text/plain; charset=utf-16"), (b"content-length", b"3")]
    assert serve([body(b"a=b")], headers=other)[0] == 200  # not form data: Django's business
    # Django keeps the last charset it reads, of the header or of two headers joined by a comma.
    for sneaked in (
        [b"application/x-www-form-urlencoded; charset=utf-8; charset=latin-1"],
        [
            b"application/x-www-form-urlencoded; charset=utf-8",
            b"application/x-www-form-urlencoded; charset=latin-1",
        ],
    ):
        headers = [*((b"content-type", value) for value in sneaked), (b"content-length", b"3")]
        status, app, _ = serve([body(b"a=b")], headers=headers)
        assert (status, app.calls) == (400, 0), sneaked


def test_the_staff_check_reads_nothing_for_strangers_or_past_its_places(settings, monkeypatch):
    """Anyone could make the server read a session for a made-up cookie (the review): not from
    an address the admin is closed to, not without a cookie, and at most a few at once."""
    from config import asgi

    reads: list[str] = []
    release = asyncio.Event()

    async def reading(key):
        reads.append(key)
        await release.wait()
        return True

    monkeypatch.setattr(asgi, "_staff_signed_in_on_shared_thread", reading)

    def scope(cookie: str | None, client: str = "198.51.100.7") -> dict:
        headers = [(b"cookie", f"sessionid={cookie}".encode())] if cookie else []
        return {"type": "http", "path": "/admin/import/", "headers": headers, "client": (client, 5000)}

    async def scenario():
        assert await asgi.large_body_allowed(scope(None)) is False
        settings.ADMIN_ALLOWED_NETWORKS = ["10.0.0.0/8"]
        assert await asgi.large_body_allowed(scope("s" * 32)) is False
        assert reads == []  # neither read a session
        settings.ADMIN_ALLOWED_NETWORKS = []
        checks = [asyncio.create_task(asgi.large_body_allowed(scope(f"k{n}" * 8))) for n in range(3)]
        await asyncio.sleep(0.01)
        assert len(reads) == asgi.STAFF_CHECKS_AT_ONCE  # the third was refused unread
        release.set()
        return await asyncio.gather(*checks)

    assert asyncio.run(scenario()) == [True, True, False]
