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
    that holds data or descriptions (a codebook's "+1 bias" too), and leave it off only for a
    header row of column names."""
    return _writer.writerow([_safe(v) for v in values] if guard else list(values))


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _safe(value: Any) -> Any:
    """The guard, so that it can be undone (analysis.metrics.frames reads the exports back): a
    cell that starts like a formula gets an apostrophe, and so does one that is already
    apostrophes before such a start, so that taking one apostrophe off always gives the text
    as written."""
    if isinstance(value, str) and value:
        if value[0] == "'":
            return "'" + value if value.lstrip("'")[:1] in FORMULA_STARTS else value
        if value[0] in FORMULA_STARTS and not _is_number(value):
            return "'" + value
    return value


def unguarded(cell: str) -> str:
    """A cell read back from one of our CSV files as it was before `_safe`: one apostrophe off
    a cell that, without its leading apostrophes, starts like a formula (the imports; the
    analysis has its own copy, analysis.metrics.frames, which may not import this module)."""
    if cell[:1] == "'" and cell.lstrip("'")[:1] in FORMULA_STARTS:
        return cell[1:]
    return cell


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


_DONE = object()


async def pulled_in_thread(chunks: Iterator[Any]) -> AsyncIterator[Any]:
    """A synchronous iterator (it may read the database) served to an async consumer one item
    at a time, each made in the shared thread where the request's view ran, so the iterator's
    database connection is the request's; nothing is buffered beyond the item."""
    pull = sync_to_async(next, thread_sensitive=True)
    while (item := await pull(chunks, _DONE)) is not _DONE:
        yield item


def _batches(pieces: Iterator[str | bytes], batch: int) -> Iterator[str | bytes]:
    """`batch` pieces of text or bytes at a time, joined (empty batches left out)."""
    while items := list(islice(pieces, batch)):
        if chunk := (b"" if isinstance(items[0], bytes) else "").join(items):
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
    response = StreamingHttpResponse(
        pulled_in_thread(_batches(iter(pieces), batch)), content_type=content_type
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response
