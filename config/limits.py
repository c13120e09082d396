"""Limits on an HTTP request, checked before it may take an admission place.

The body is read here, in the event loop, before the request goes on to the admission limit
(config.admission) and Django: a client that sends its headers and then stalls its body
holds a connection, never one of the few places that serve pages. The whole body must
arrive within `HTTP_BODY_TIMEOUT_S` (else 408) and be at most `HTTP_MAX_BODY_BYTES` (else
413: at once when Content-Length says so, otherwise as soon as a chunked body passes it).
Only the admin's pages (file imports) may send that much: every other path (participants'
forms, the webhook, the API) takes at most `HTTP_MAX_PUBLIC_BODY_BYTES`, so bodies held in
memory while they arrive cost an anonymous client a fifth as much.
More than `HTTP_MAX_HEADERS` header lines, or more than `HTTP_MAX_HEADER_BYTES` of them or of
request target, are refused with 431 or 414 (config.protocol refuses them earlier still, while
they arrive, when uvicorn runs with it). The body then goes on to the application as one
message. Every refusal closes the connection: what the client still sends is not read.

A body above the public limit to an admin page is read on only once the request's session
is a signed-in staff member's (`large_body_allowed`, checked once, when the body is announced
or found to be that large): an anonymous client gets the public limit on every path.
Bodies held at once by the process, all requests together, are capped too
(`HTTP_MAX_BODY_BYTES_HELD`): past it, a body larger than `SMALL_BODY_BYTES` (no
participant's page of answers in ordinary use) is refused with 503 and Retry-After, so many
slow uploads cannot fill the server's memory; a staff member's import is never refused for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from common.security import ADMIN_PREFIX, app_path

SMALL_BODY_BYTES = 64 * 1024  # never refused for the bytes other requests hold
BUSY_RETRY_AFTER_S = 30


@dataclass(frozen=True)
class Limits:
    max_headers: int
    max_header_bytes: int
    max_body_bytes: int
    body_timeout_s: float
    max_public_body_bytes: int | None = None  # paths outside the admin; None: max_body_bytes
    max_bytes_held: int | None = None  # bodies held at once by the process; None: no cap

    @classmethod
    def from_settings(cls) -> Limits:
        from django.conf import settings

        return cls(
            max_headers=settings.HTTP_MAX_HEADERS,
            max_header_bytes=settings.HTTP_MAX_HEADER_BYTES,
            max_body_bytes=settings.HTTP_MAX_BODY_BYTES,
            body_timeout_s=settings.HTTP_BODY_TIMEOUT_S,
            max_public_body_bytes=settings.HTTP_MAX_PUBLIC_BODY_BYTES,
            max_bytes_held=settings.HTTP_MAX_BODY_BYTES_HELD,
        )

    def public(self) -> Limits:
        """The limits of a request outside the admin: the smaller body limit."""
        if self.max_public_body_bytes is None:
            return self
        return replace(self, max_body_bytes=min(self.max_body_bytes, self.max_public_body_bytes))


class BodyTooLarge(Exception):
    def __init__(self, limits: Limits, public: bool) -> None:
        super().__init__()
        self.limits = limits
        self.public = public


class ServerBusy(Exception):
    pass


class RequestLimits:
    """ASGI middleware: refuse what is too large or too slow, then replay the body.

    `large_body_allowed(scope)` says whether an admin request may send more than the public
    limit (in the server: a signed-in staff session, common.security.staff_signed_in); None
    lets every admin request send up to the full limit."""

    def __init__(
        self, app, limits: Limits, *, large_body_allowed: Callable[[dict], Awaitable[bool]] | None = None
    ) -> None:
        self.app = app
        self.admin_limits = limits
        self.public_limits = limits.public()
        self.large_body_allowed = large_body_allowed
        self.held = 0  # bytes of request bodies this process holds now (one event loop: no lock)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        admin = app_path(scope).startswith(ADMIN_PREFIX)
        refusal = head_refusal(scope, self.admin_limits if admin else self.public_limits)
        if refusal is not None:
            await refuse(send, *refusal)
            return
        if not has_body(scope):  # the server holds the whole (empty) request already
            await self.app(scope, receive, send)
            return
        body = BodyRead(self, scope, admin)
        try:
            async with asyncio.timeout(self.admin_limits.body_timeout_s):
                data = await body.read(receive)
            if data is None:  # the client went away
                return
            await self.app(scope, replay(data, receive), send)
        except TimeoutError:
            if body.finished:
                raise
            await refuse(send, 408, "Request Timeout: the request body did not arrive in time.")
        except BodyTooLarge as refused:
            await refuse(send, 413, too_large(refused.limits, signed_out=refused.public and admin))
        except ServerBusy:
            await refuse(
                send,
                503,
                "Service Unavailable: this server is receiving too much data at once. Try again in a minute.",
                retry_after=BUSY_RETRY_AFTER_S,
            )
        finally:
            self.held -= body.size


class BodyRead:
    """One request's body as it arrives, within its limits and the process's bytes held."""

    def __init__(self, limits: RequestLimits, scope, admin: bool) -> None:
        self.owner = limits
        self.scope = scope
        self.limit = limits.public_limits.max_body_bytes
        # Whether the body may grow past the public limit, once the session is checked.
        self.may_grow = admin and limits.admin_limits.max_body_bytes > self.limit
        self.staff = False
        self.size = 0  # bytes read and counted in the owner's `held`
        self.finished = False

    async def read(self, receive) -> bytes | None:
        """The whole body, or None when the client disconnects first."""
        announced = announced_length(self.scope)
        if announced is not None and announced > self.limit:
            await self.grow(announced)
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            if self.size + len(chunk) > self.limit:
                await self.grow(self.size + len(chunk))
            if self.over_cap(len(chunk)):
                # An admin request not checked yet may be a staff member's import (below the
                # public limit too), which the cap never refuses.
                if self.may_grow:
                    await self.check()
                if self.over_cap(len(chunk)):
                    raise ServerBusy
            self.size += len(chunk)
            self.owner.held += len(chunk)
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                self.finished = True
                return b"".join(chunks)

    async def check(self) -> None:
        """Ask once whether the request comes from a staff session; if so, the admin's limit."""
        owner = self.owner
        self.may_grow = False
        allowed = owner.large_body_allowed
        self.staff = allowed is None or await allowed(self.scope)
        if self.staff:
            self.limit = owner.admin_limits.max_body_bytes

    async def grow(self, size: int) -> None:
        """`size` bytes are past the public limit: allowed up to the admin's limit for a staff
        session, else refused."""
        if self.may_grow:
            await self.check()
        if size > self.limit:
            owner = self.owner
            raise BodyTooLarge(
                owner.admin_limits if self.staff else owner.public_limits, public=not self.staff
            )

    def over_cap(self, size: int) -> bool:
        """Whether `size` more bytes would pass the process's cap on bodies held (a staff
        session's body and the first SMALL_BODY_BYTES of any body are never refused for it)."""
        owner = self.owner
        cap = owner.admin_limits.max_bytes_held
        return (
            cap is not None
            and not self.staff
            and self.size + size > SMALL_BODY_BYTES
            and owner.held + size > cap
        )


def announced_length(scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length" and value.strip().isdigit():
            return int(value)
    return None


def head_refusal(scope, limits: Limits) -> tuple[int, str] | None:
    """Why the request line and headers alone refuse the request, or None."""
    headers = scope["headers"]
    query = scope.get("query_string") or b""
    if len(scope.get("raw_path") or b"") + len(query) > limits.max_header_bytes:
        return 414, "URI Too Long."
    if b"%00" in query or b"\x00" in query:
        # No text column takes a NUL: a filter of the admin's lists with one was a database
        # error, a 500 (the hostile-traffic probe); nothing of ours has a use for it.
        return 400, "Bad Request: a NUL character in the query string."
    if len(headers) > limits.max_headers:
        return 431, "Request Header Fields Too Large: too many headers."
    if sum(len(name) + len(value) + 4 for name, value in headers) > limits.max_header_bytes:
        return 431, "Request Header Fields Too Large."
    content_types = []
    for name, value in headers:
        if name == b"content-length" and value.strip().isdigit() and int(value) > limits.max_body_bytes:
            return 413, too_large(limits)
        if name == b"content-type":
            content_types.append(value)
    # Django joins repeated headers with a comma and reads the joined value.
    if content_types and not form_charset_ok(b",".join(content_types)):
        return 400, "Bad Request: form data must be UTF-8."
    return None


def too_large(limits: Limits, *, signed_out: bool = False) -> str:
    """The 413's text: what a researcher who chose too large a file to import reads."""
    size = limits.max_body_bytes
    shown = f"{size / 1024 / 1024:g} MB" if size >= 1024 * 1024 else f"{size} bytes"
    if signed_out:
        return (
            f"Content Too Large: the request is over this server's limit of {shown} for requests "
            "that do not come from a signed-in staff account (HTTP_MAX_PUBLIC_BODY_BYTES). "
            "Sign in to the admin again, then send the file."
        )
    return (
        f"Content Too Large: the request is over this server's limit of {shown} (HTTP_MAX_BODY_BYTES). "
        "Go back and send a smaller file."
    )


def form_charset_ok(content_type: bytes) -> bool:
    """False for form data that names a charset other than UTF-8. Django refuses it only when
    the form is first read, and its own error pages read the form again (the CSRF token), so
    the refusal escaped as a 500 with a traceback of hundreds of lines, from any client, on
    any path.

    Every charset parameter must say UTF-8, not only the first: Django keeps the last one it
    reads, so "charset=utf-8; charset=latin-1" (or a second Content-Type header, which it joins
    to the first with a comma) had passed this check and failed there."""
    kind, _, params = content_type.decode("latin-1").partition(";")
    if kind.strip().lower() != "application/x-www-form-urlencoded":
        return True
    for param in params.replace(",", ";").split(";"):
        key, _, charset = param.partition("=")
        if key.strip().lower() == "charset" and charset.strip().strip('"').lower() != "utf-8":
            return False
    return True


def has_body(scope) -> bool:
    """Whether the request announces a body (HTTP/1.1: a Content-Length above 0, or chunks)."""
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"0", b"")):
            return True
    return False


def replay(body: bytes, receive):
    """A receive() that hands the body over once, then waits on the client (a disconnect)."""
    pending = True

    async def receive_replayed():
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return receive_replayed


async def refuse(send, status: int, text: str, *, retry_after: int | None = None) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
