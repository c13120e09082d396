"""File downloads: CSV rows made safe for spreadsheets, and responses that stream a long
file in batches under ASGI instead of buffering it whole."""

from __future__ import annotations

import csv
from collections.abc import AsyncIterator, Iterable, Iterator
from itertools import islice
from typing import Any

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

BATCH_LINES = 500


class _Echo:
    def write(self, value: str) -> str:
        return value


_writer = csv.writer(_Echo())


def csv_line(values: Iterable[Any], *, guard: bool = True) -> str:
    """One CSV line (with its line break). With `guard`, a text cell that a spreadsheet
    would run as a formula gets a leading apostrophe (CSV injection): use it for every cell
    that holds data, and leave it off only for text of our own (headers, a codebook)."""
    return _writer.writerow([_safe(v) for v in values] if guard else list(values))


def _safe(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") and not _is_number(value):
        return "'" + value
    return value


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


async def _batches(pieces: Iterator[str | bytes], batch: int) -> AsyncIterator[str | bytes]:
    """Serve a synchronous generator of text or bytes (it may read the database) without
    buffering it all: each batch is produced in the request's sync thread, so the
    generator's database connection is the request's."""

    def take():
        items = list(islice(pieces, batch))
        return (b"" if isinstance(items[0], bytes) else "").join(items) if items else None

    take_async = sync_to_async(take, thread_sensitive=True)
    while (chunk := await take_async()) is not None:
        if chunk:
            yield chunk


def streamed_download(
    pieces: Iterable[str | bytes],
    filename: str,
    content_type: str = "text/csv; charset=utf-8",
    *,
    batch: int = BATCH_LINES,
) -> StreamingHttpResponse:
    """A download of text lines (or chunks of bytes, with a smaller `batch`) as they are
    produced, never held whole in memory."""
    response = StreamingHttpResponse(_batches(iter(pieces), batch), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response
