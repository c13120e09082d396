"""Every download the admin offers streams in batches under ASGI: a synchronous generator
handed to Django would be buffered whole (and Django warns; pyproject.toml turns that
warning into an error for the whole suite)."""

import csv
import io
import json

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient
from hypothesis import given
from hypothesis import strategies as st

from analysis.exports import TABLES
from analysis.metrics import frames
from common.downloads import FORMULA_STARTS, csv_line, streamed_download, unguarded
from debates.models import InstanceSet
from tests.support.cast import Walker, experimenter_user


def download_urls(study, pool) -> list[str]:
    urls = [f"/admin/studies/study/{study.pk}/export/{table}.csv" for table in TABLES]
    urls.append("/admin/studies/study/export/codebook.csv")
    urls += [f"/admin/debates/instanceset/{pool.pk}/export.{fmt}" for fmt in ("csv", "json")]
    return urls


@pytest.mark.django_db
def test_every_download_streams_under_asgi(pairs_study):
    w = Walker(pairs_study)
    w.enter()
    w.walk()
    client = AsyncClient()
    client.force_login(experimenter_user())
    for url in download_urls(pairs_study, InstanceSet.objects.get()):

        async def fetch(url=url):
            response = await client.get(url)
            body = (
                b"".join([chunk async for chunk in response.streaming_content]) if response.streaming else b""
            )
            return response, body

        response, body = async_to_sync(fetch)()
        assert response.status_code == 200, url
        assert response.streaming and response.is_async, url
        assert response["Content-Disposition"].startswith("attachment"), url
        if url.endswith(".json"):
            assert json.loads(body)["format"] == "rostrum.instances/1"
        else:
            rows = list(csv.reader(io.StringIO(body.decode())))
            assert rows and rows[0], url  # a header, at least
            if "comparisons" in url or "instanceset" in url:
                assert len(rows) > 1, url


def test_a_long_download_is_produced_in_batches_not_all_at_once():
    produced = []

    def lines():
        for n in range(1200):
            produced.append(n)
            yield f"{n}\n"

    response = streamed_download(lines(), "numbers.csv")

    async def first_chunk():
        iterator = response.streaming_content.__aiter__()
        return await iterator.__anext__()

    chunk = async_to_sync(first_chunk)()
    assert chunk.decode().splitlines()[0] == "0"
    assert len(produced) < 1200  # the rest is produced only when the client reads on


def test_cells_a_spreadsheet_would_run_are_defused_but_numbers_are_not():
    cells = next(csv.reader(io.StringIO(csv_line(['=HYPERLINK("x")', "+1 bias", "-3", "@cmd", "plain"]))))
    assert cells == ['\'=HYPERLINK("x")', "'+1 bias", "-3", "'@cmd", "plain"]
    assert csv_line(["+1 bias"], guard=False) == "+1 bias\r\n"


# --- The guard against spreadsheet formulas, and reading it back -----------------------------

FORMULA_LIKE = st.text(
    alphabet=st.sampled_from(["'", "=", "+", "-", "@", "\t", "\r", "1", "a", " "]), max_size=8
)


@given(st.one_of(FORMULA_LIKE, st.text(max_size=20)))
def test_a_guarded_cell_reads_back_as_written(text):
    """Our CSV files are read back by the imports and the analysis: guarded, then unguarded,
    every text is itself again (apostrophes before a formula's start included)."""
    cell = next(csv.reader(io.StringIO(csv_line([text])), strict=True), [""])[0] if text else ""
    assert unguarded(cell) == text
    assert frames.unguarded(cell) == text  # the analysis's own copy agrees
    if cell[:1] in FORMULA_STARTS:  # what a spreadsheet would run is a number, never a formula
        float(cell)


def test_the_copies_of_the_guard_agree():
    assert frames.FORMULA_STARTS == FORMULA_STARTS
    assert csv_line(["=1+1", "-5", "'=x", "'plain"]) == "'=1+1,-5,''=x,'plain\r\n"
