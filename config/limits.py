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
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from common.security import ADMIN_PREFIX


@dataclass(frozen=True)
class Limits:
    max_headers: int
    max_header_bytes: int
    max_body_bytes: int
    body_timeout_s: float
    max_public_body_bytes: int | None = None  # paths outside the admin; None: max_body_bytes

    @classmethod
    def from_settings(cls) -> Limits:
        from django.conf import settings

        return cls(
            max_headers=settings.HTTP_MAX_HEADERS,
            max_header_bytes=settings.HTTP_MAX_HEADER_BYTES,
            max_body_bytes=settings.HTTP_MAX_BODY_BYTES,
            body_timeout_s=settings.HTTP_BODY_TIMEOUT_S,
            max_public_body_bytes=settings.HTTP_MAX_PUBLIC_BODY_BYTES,
        )

    def public(self) -> Limits:
        """The limits of a request outside the admin: the smaller body limit."""
        if self.max_public_body_bytes is None:
            return self
        return replace(self, max_body_bytes=min(self.max_body_bytes, self.max_public_body_bytes))


class BodyTooLarge(Exception):
    pass


class RequestLimits:
    """ASGI middleware: refuse what is too large or too slow, then replay the body."""

    def __init__(self, app, limits: Limits) -> None:
        self.app = app
        self.admin_limits = limits
        self.public_limits = limits.public()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.admin_limits if scope["path"].startswith(ADMIN_PREFIX) else self.public_limits
        refusal = head_refusal(scope, limits)
        if refusal is not None:
            await refuse(send, *refusal)
            return
        if not has_body(scope):  # the server holds the whole (empty) request already
            await self.app(scope, receive, send)
            return
        try:
            async with asyncio.timeout(limits.body_timeout_s):
                body = await read_body(receive, limits.max_body_bytes)
        except TimeoutError:
            await refuse(send, 408, "Request Timeout: the request body did not arrive in time.")
            return
        except BodyTooLarge:
            await refuse(send, 413, too_large(limits))
            return
        if body is None:  # the client went away
            return
        await self.app(scope, replay(body, receive), send)


def head_refusal(scope, limits: Limits) -> tuple[int, str] | None:
    """Why the request line and headers alone refuse the request, or None."""
    headers = scope["headers"]
    if len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") > limits.max_header_bytes:
        return 414, "URI Too Long."
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


def too_large(limits: Limits) -> str:
    """The 413's text: what a researcher who chose too large a file to import reads."""
    size = limits.max_body_bytes
    shown = f"{size / 1024 / 1024:g} MB" if size >= 1024 * 1024 else f"{size} bytes"
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


async def read_body(receive, max_bytes: int) -> bytes | None:
    """The whole body, or None when the client disconnects first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge
        if chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


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


async def refuse(send, status: int, text: str) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
