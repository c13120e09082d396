"""Tidy CSV tables, streamed from the database, with a codebook of every column.

Each table is a list of columns (name, description, how to read it from a row) and a
generator of rows for one study; the tables of each study design are in their own module.
Preview participants never appear.
"""

from __future__ import annotations

from collections.abc import Iterator

from analysis.exports import dialogues, live, pairwise, participants
from analysis.exports.table import Table
from common.downloads import csv_line
from studies.models import Study

TABLES: dict[str, Table] = {
    t.name: t
    for t in [
        participants.PARTICIPANTS,
        participants.RESPONSES,
        dialogues.JUDGEMENTS,
        participants.STEP_TIMES,
        live.CLAIM_JUDGEMENTS,
        live.LIVE_TURNS,
        pairwise.COMPARISONS,
    ]
}


def csv_lines(table: Table, study: Study) -> Iterator[str]:
    """The table as CSV text, line by line (header first)."""
    yield csv_line((c.name for c in table.columns), guard=False)
    for row in table.rows(study):
        yield csv_line(c.get(row) for c in table.columns)


def codebook_lines() -> Iterator[str]:
    yield csv_line(["table", "column", "description"], guard=False)
    for table in TABLES.values():
        yield csv_line([table.name, "", table.description], guard=False)
        for column in table.columns:
            yield csv_line([table.name, column.name, column.description], guard=False)
