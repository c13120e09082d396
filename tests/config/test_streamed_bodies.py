"""Streamed bodies through the server's ASGI handler (config.asgi.SharedThreadASGIHandler): a
synchronous body (a file, a generator) goes out chunk by chunk as it is made, from the thread
that made it. Django's own handler read it whole into a list before the first byte. (The CSV
exports give an async iterator of their own, common.downloads, and were not affected.)"""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.http import FileResponse, StreamingHttpResponse

from config.asgi import SharedThreadASGIHandler

# The handler sends request_started/finished, which check the shared thread's database
# connection (another test may have left one open there).
pytestmark = pytest.mark.django_db

SCOPE = {
    "type": "http",
    "asgi": {"version": "3.0"},
    "http_version": "1.1",
    "method": "GET",
    "scheme": "http",
    "path": "/export.csv",
    "raw_path": b"/export.csv",
    "query_string": b"",
    "root_path": "",
    "headers": [(b"host", b"testserver")],
    "client": ("127.0.0.1", 50000),
    "server": ("testserver", 80),
}


def serve(response_of, note=lambda: None) -> list[tuple[bytes, object]]:
    """Serve one GET whose view returns `response_of()`: the body parts sent, each with what
    `note()` said when it was sent."""
    handler = SharedThreadASGIHandler()
    handler.get_response = lambda request: response_of()
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.body" and message.get("body"):
            sent.append((message["body"], note()))

    asyncio.run(handler(dict(SCOPE), receive, send))
    return sent


def test_a_synchronous_body_is_sent_as_it_is_made_from_the_thread_that_made_it(recwarn):
    made, threads = [], set()

    def lines():
        for n in range(5):
            made.append(n)
            threads.add(threading.get_ident())
            yield f"row {n}\n" * 1000

    def response():
        threads.add(threading.get_ident())  # the view's thread
        return StreamingHttpResponse(lines())

    parts = [body for body, _ in serve(response)]
    assert parts == [f"row {n}\n".encode() * 1000 for n in range(5)] and made == [0, 1, 2, 3, 4]
    assert len(threads) == 1  # the view and every chunk: one thread (its database connection)
    assert not [w for w in recwarn if "must consume synchronous iterators" in str(w.message)]


def test_each_part_is_sent_before_the_next_is_made():
    made = []

    def lines():
        for n in range(4):
            made.append(n)
            yield f"{n}\n"

    made_when_sent = [when for _, when in serve(lambda: StreamingHttpResponse(lines()), lambda: len(made))]
    assert made_when_sent == [1, 2, 3, 4]


def test_a_file_is_sent_whole_and_closed(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 1024)  # 256 KiB: several chunks
    handle = path.open("rb")
    parts = [body for body, _ in serve(lambda: FileResponse(handle))]
    assert b"".join(parts) == path.read_bytes() and len(parts) > 1
    assert handle.closed
