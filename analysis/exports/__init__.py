"""Tidy CSV tables, streamed from the database, with a codebook of every column.

Each table is a list of columns (name, description, how to read it from a row) and a
generator of rows for one study; the tables of each study design are in their own module.
Preview participants never appear.
"""

from __future__ import annotations

from collections.abc import Iterator

from analysis.access import pseudonymise
from analysis.exports import (
    dialogues,
    draws,
    live,
    llm_judges,
    llm_persona,
    pairwise,
    participants,
    persuasion,
)
from analysis.exports.items import study_items
from analysis.exports.table import Table
from common.downloads import csv_line
from studies.models import Study

TABLES: dict[str, Table] = {
    t.name: t
    for t in [
        participants.PARTICIPANTS,
        participants.RESPONSES,
        dialogues.JUDGEMENTS,
        llm_judges.LLM_JUDGEMENTS,
        participants.STEP_TIMES,
        live.CLAIM_JUDGEMENTS,
        live.LIVE_TURNS,
        llm_persona.LLM_PERSONA_JUDGEMENTS,
        llm_persona.LLM_STRATEGY_RATINGS,
        pairwise.COMPARISONS,
        draws.DRAWS,
        persuasion.PERSUASION_DIALOGUES,
        persuasion.PERSUASION_MOVES,
    ]
}


def csv_lines(table: Table, study: Study, *, pseudonyms: bool = False) -> Iterator[str]:
    """The table as CSV text, line by line (header first); with `pseudonyms`, Prolific's
    participant and submission ids are replaced by per-study pseudonyms."""
    yield csv_line((c.name for c in table.columns), guard=False)
    for row in table.rows_for(study):
        if pseudonyms:
            pseudonymise(row, study)
        yield csv_line(c.get(row) for c in table.columns)


FORMULA_GUARD = (
    "A text cell that starts with =, +, -, @, a tab or a carriage return (and is not a number) "
    "starts with an apostrophe in these CSV files, so that a spreadsheet shows it instead of "
    "running it as a formula: remove that first apostrophe to get the text as written (so does "
    "a cell of apostrophes before such a start, which loses one the same way). The API's JSON "
    "rows carry the text as written."
)


def codebook_lines(study: Study | None = None) -> Iterator[str]:
    """Every column of every table; with a study, also its own items: each question's key,
    text, options with their numeric coding, and the expected answers of checks."""
    # Guarded like data: a description may start like a formula ("+1 bias on side A", or a
    # question text the researcher typed), which a spreadsheet showed as #NAME?.
    yield csv_line(["table", "column", "description"], guard=False)
    yield csv_line(["(every table)", "", FORMULA_GUARD])
    for table in TABLES.values():
        yield csv_line([table.name, "", table.description])
        for column in table.columns:
            yield csv_line([table.name, column.name, column.description])
    if study is not None:
        for key, description in study_items(study):
            yield csv_line(["responses", key, description])
