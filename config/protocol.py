"""uvicorn's httptools protocol with limits on the request head.

Run as `uvicorn … --http config.protocol:LimitedHttpTools` (UVICORN_OPTIONS below, scripts/demo.sh,
docker/Dockerfile).

uvicorn's fast parser (httptools, its default) buffers a request line and headers of any
size, in any number, for as long as the client takes to send them: an 8 MB header block or
20,000 headers were accepted. Its other parser (`--http h11`) bounds the head with
`--h11-max-incomplete-event-size` but costs pure-Python parsing on every request. This
subclass keeps httptools and, while the head arrives, refuses:
- more than `HTTP_MAX_HEADER_BYTES` of request target (414) or of header lines (431),
  counted per header and, for a head still incomplete, per chunk received, so a huge head
  is refused after one read beyond the limit, not once it is complete;
- more than `HTTP_MAX_HEADERS` header lines (431);
- a head not complete `HTTP_HEADER_TIMEOUT_S` after the connection opened or the request
  began (408), so trickled headers do not hold connections forever.
The limits are read from Django's settings (config.settings) at the first connection, once
the application has been loaded. config.limits checks the same limits again in the
application, for servers started without this protocol.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

# uvicorn's options as production starts it (docker/Dockerfile and scripts/demo.sh write the same
# on their command lines): this protocol; websocket frames of at most 256 KiB (uvicorn's default
# is 16 MiB, held and decoded before the app refuses anything over 16,384 characters); no
# `server:` header. The test servers, devtools.cluster and bench/arrivals start uvicorn with these.
UVICORN_OPTIONS = [
    "--http",
    "config.protocol:LimitedHttpTools",
    "--ws-max-size",
    "262144",
    "--no-server-header",
]


class HeadRefused(Exception):
    pass


class LimitedHttpTools(HttpToolsProtocol):
    limits: tuple[int, int, float] | None = None  # max headers, max head bytes, head timeout

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if LimitedHttpTools.limits is None:
            from django.conf import settings

            LimitedHttpTools.limits = (
                settings.HTTP_MAX_HEADERS,
                settings.HTTP_MAX_HEADER_BYTES,
                settings.HTTP_HEADER_TIMEOUT_S,
            )
        self.max_headers, self.max_head_bytes, self.head_timeout_s = LimitedHttpTools.limits
        self.head_timer: asyncio.TimerHandle | None = None
        self.head_bytes = self.head_count = self.head_received = 0
        self.in_head = False
        self.refusal: tuple[int, str] | None = None

    # --- the head's clock and size -------------------------------------------------------

    def head_begins(self) -> None:
        self.in_head = True
        self.head_bytes = self.head_count = self.head_received = 0
        if self.head_timer is None:
            self.head_timer = self.loop.call_later(self.head_timeout_s, self.head_timed_out)

    def head_ends(self) -> None:
        self.in_head = False
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def head_timed_out(self) -> None:
        self.head_timer = None
        if not self.in_head or self.transport.is_closing():
            return
        if self.head_received or self.head_bytes:
            self.refuse(408, "Request Timeout: the request headers did not arrive in time.")
        else:  # an idle connection that never sent a byte: close it quietly
            self.head_ends()
            self.transport.close()

    def count(self, size: int, *, target: bool = False) -> None:
        self.head_bytes += size
        if self.head_bytes > self.max_head_bytes:
            self.refusal = (414, "URI Too Long.") if target else (431, "Request Header Fields Too Large.")
            raise HeadRefused
        if self.head_count > self.max_headers:
            self.refusal = (431, "Request Header Fields Too Large: too many headers.")
            raise HeadRefused

    def refuse(self, status: int, text: str) -> None:
        self.head_ends()
        body = text.encode()
        self.transport.write(
            STATUS_LINE[status] + b"content-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
        )
        self.transport.close()

    # --- uvicorn's protocol --------------------------------------------------------------

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_begins()

    def connection_lost(self, exc: Exception | None) -> None:
        self.head_ends()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.in_head and not self.transport.is_closing():
            # The head is still incomplete: what this read brought belongs to it (httptools
            # keeps a header's name and value until the header is complete).
            self.head_received += len(data)
            if self.head_received > self.max_head_bytes:
                self.refuse(431, "Request Header Fields Too Large.")

    def send_400_response(self, msg: str) -> None:
        # uvicorn answers 400 to any error raised while parsing, ours included.
        if self.refusal is not None:
            self.refuse(*self.refusal)
        else:
            super().send_400_response(msg)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.head_begins()

    def on_url(self, url: bytes) -> None:
        self.count(len(url), target=True)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_count += 1
        self.count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self.head_ends()
        super().on_headers_complete()
