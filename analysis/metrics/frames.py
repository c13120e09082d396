"""The platform's CSV export tables as typed pandas data frames.

Reading a folder of exports, converting the known columns, checking the columns an analysis
needs, and identifying participants across tables.

Every export table may carry a `study` column (the study slug) and tables merged from several
studies are supported: participants are then identified by (study, participant_id).
"""

from __future__ import annotations

import csv
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

# Column kinds: "int" (Int64, or float when a value is not whole), "id" (Int64, whole numbers
# only: ids join the tables), "float", "flag" (nullable boolean from "1"/"0"/""), "str" (text,
# empty = NA), "code" (text from the fixed set of codes in `CODES`, compared exactly, e.g. a
# status: read in the codes' own case, 1.0 as 1), "datetime" (ISO 8601, UTC).
_COMMON = {"study": "str", "study_sha256": "str"}

SCHEMAS: dict[str, dict[str, str]] = {
    "participants": {
        "participant_id": "id",
        "prolific_pid": "str",
        "prolific_study_id": "str",
        "prolific_session_id": "str",
        "status": "code",
        "position": "int",
        "step_title": "str",
        "started_at": "datetime",
        "finished_at": "datetime",
        "duration_s": "float",
        "last_seen_at": "datetime",
        "expires_at": "datetime",
        "visits": "int",
        "attention_failures": "int",
        "excluded": "flag",
        "exclusion_reasons": "str",
        "flags": "str",
        "flag_count": "int",
        "dialogue": "str",
        "case": "str",
        "condition": "str",
        "active_side": "code",
        "variant": "str",
        "side_a": "code",
        "assigned_at": "datetime",
        "words": "int",
        "reading_ms": "int",
        "reading_server_ms": "int",
        "reading_client_ms": "int",
        "reread_ms": "int",
        "wpm": "float",
        "group": "str",
        "user_agent": "str",
    },
    "responses": {
        "participant_id": "id",
        "prolific_pid": "str",
        "position": "int",
        "step_kind": "str",
        "key": "str",
        "value": "str",
        "value_num": "float",
        "is_check": "flag",
        "passed": "flag",
        "created_at": "datetime",
        "text_keys": "int",
        "text_pastes": "int",
        "text_pasted_chars": "int",
        "text_typing_ms": "int",
    },
    "step_times": {
        "participant_id": "id",
        "position": "int",
        "step_kind": "str",
        "shown_at": "datetime",
        "submitted_at": "datetime",
        "server_ms": "int",
        "client_active_ms": "int",
        "client_hidden_ms": "int",
        "client_blurs": "int",
        "flags": "str",
    },
    "judgements": {
        "participant_id": "id",
        "prolific_pid": "str",
        "participant_status": "code",
        "excluded": "flag",
        "exclusion_reasons": "str",
        "dialogue": "str",
        "case": "str",
        "condition": "str",
        "active_side": "code",
        "variant": "str",
        "side_a": "code",
        "culprit_side": "code",
        "active_side_letter": "code",
        "signed_active_side": "int",
        "chosen_side": "code",
        "chose_a": "flag",
        "correct": "flag",
        "followed_bias": "flag",
        "confidence": "int",
        "reasoning": "str",
        "bias_present": "code",
        "bias_side": "code",
        "bias_type": "str",
        "bias_presence_correct": "flag",
        "bias_side_correct": "flag",
        "bias_type_correct": "flag",
        "recall_passed": "flag",
        "wpm": "float",
        "created_at": "datetime",
    },
    "claim_judgements": {
        "participant_id": "id",
        "prolific_pid": "str",
        "participant_status": "code",
        "excluded": "flag",
        "exclusion_reasons": "str",
        "group": "str",
        "position": "int",
        "claim": "str",
        "domain": "str",
        "truth": "code",
        "protocol": "code",
        "debater_a_side": "code",
        "consultant_side": "code",
        "consultant_side_mode": "code",
        "consultant_correct": "flag",
        "consultant_side_fallback": "flag",
        "phase": "code",
        "initial_answer": "code",
        "initial_confidence": "float",
        "initial_correct": "flag",
        "initial_p_correct": "float",
        "final_answer": "code",
        "final_confidence": "float",
        "final_correct": "flag",
        "final_p_correct": "float",
        "justification": "str",
        "judge_questions": "int",
        "rounds": "int",
        "assigned_at": "datetime",
        "chat_started_at": "datetime",
        "chat_ended_at": "datetime",
        "finished_at": "datetime",
        "chat_seconds": "float",
    },
    "live_turns": {
        "participant_id": "id",
        "session_id": "id",
        "claim": "str",
        "protocol": "code",
        "seq": "int",
        "round": "int",
        "speaker": "str",
        "side": "code",
        "target": "str",
        "status": "code",
        "attempts": "int",
        "text": "str",
        "error": "str",
        "created_at": "datetime",
        "started_at": "datetime",
        "finished_at": "datetime",
        "model": "str",
        "tokens_in": "int",
        "tokens_out": "int",
        "ttft_ms": "float",
        "total_ms": "float",
    },
    "comparisons": {
        "participant_id": "id",
        "prolific_pid": "str",
        "participant_status": "code",
        "excluded": "flag",
        "valid": "flag",
        "instance_set": "str",
        "instance": "int",
        "order": "int",
        "is_check": "flag",
        "check_answer": "str",
        "check_passed": "flag",
        "stance": "str",
        "debate_1": "str",
        "debate_2": "str",
        "interlocutor_1": "str",
        "interlocutor_2": "str",
        "shown_first": "str",
        "choice": "str",
        "winner": "code",
        "winner_interlocutor": "str",
        "confidence": "int",
        "served_at": "datetime",
        "answered_at": "datetime",
        "seconds": "float",
    },
}
for _schema in SCHEMAS.values():
    _schema.update(_COMMON)

TABLES = tuple(SCHEMAS)

# The codes the export writes in each code column (its codebooks, analysis/exports), by column
# name, or by "table.column" where a name means different things in different tables. A value
# in another case is read as the code ('a' as 'A'); a value outside them is kept, and since the
# figures compare codes exactly no figure counts its row as any code: it is counted in the
# notes, so the report says how many rows a figure could not use. tests/analysis/metrics/
# test_frames.py checks these against the models' choices.
_STATUSES = (
    "active", "completed", "no_consent", "failed_check",
    "screened_out", "study_full", "timed_out", "returned",
)  # fmt: skip
_TRUE_FALSE = ("true", "false")
_SIDE_LETTERS = ("A", "B")
_HUMAN_AGENT = ("human", "agent")
_PRO_CON = ("pro", "con")
CODES: dict[str, tuple[str, ...]] = {
    "participants.status": _STATUSES,
    "participant_status": _STATUSES,
    "active_side": ("none", "culprit", "rival"),
    "side_a": ("culprit", "rival"),
    "culprit_side": _SIDE_LETTERS,
    "active_side_letter": _SIDE_LETTERS,
    "chosen_side": _SIDE_LETTERS,
    "bias_side": ("A", "B", "unsure"),
    "bias_present": ("yes", "no", "unsure"),
    **dict.fromkeys(
        (
            "truth",
            "debater_a_side",
            "consultant_side",
            "initial_answer",
            "final_answer",
            "human_initial_answer",
            "human_final_answer",
            "debater_side",
            "live_turns.side",
        ),
        _TRUE_FALSE,
    ),
    "protocol": ("debate", "consultancy"),
    "consultant_side_mode": ("random", "preferred"),
    "phase": ("initial", "chat", "final", "done"),
    "live_turns.status": ("pending", "streaming", "done", "failed"),
    "comparisons.winner": ("1", "2", "tie"),
    "judge_kind": ("persona", "naive"),
    "level": ("none", "low", "medium", "high"),
    "pairing": ("human_ai", "human_human", "ai_ai"),
    **dict.fromkeys(("pro_kind", "con_kind", "winner_kind", "ended_by_kind", "author"), _HUMAN_AGENT),
    "persuasion_dialogues.status": ("waiting", "running", "finished", "abandoned"),
    "outcome": ("win", "draw", "abandoned", "open"),
    "persuasion_dialogues.winner": _PRO_CON,
    "end_reason": (
        "conceded",
        "retracted",
        "turn_limit",
        "time_limit",
        "partner_left",
        "partner_silent",
        "no_partner",
        "agent_failed",
        "budget",
    ),
    "ended_by": _PRO_CON,
    "persuasion_moves.speaker": _PRO_CON,
    "turn_status": ("pending", "streaming", "reading", "done", "failed"),
    "persuasion_moves.kind": ("claim", "why", "concede", "retract", "since", "question"),
}


def codes_of(table: str, column: str) -> tuple[str, ...] | None:
    """The codes the export writes in `table`'s `column`, if it is a code column it knows."""
    return CODES.get(f"{table}.{column}") or CODES.get(column)


_FLAGS = {"1": True, "0": False, "true": True, "false": False, "yes": True, "no": False}


def read_tables(folder: str | Path, also=None) -> dict[str, pd.DataFrame]:
    """Read whichever `<table>.csv` of the export tables exist in `folder`, typed; with `also`
    (another module's `read_tables`: design C's, the LLM tables'), its tables too, checked
    with the platform's for studies.

    Every cell is read as text first (so free text such as "NA" stays text and only an empty
    cell is missing), then `typed` converts the known columns."""
    folder = Path(folder)
    tables = {}
    for name in TABLES:
        path = folder / f"{name}.csv"
        if path.is_file():
            tables[name] = typed(name, read_csv(path))
    if also is not None:
        tables.update(also(folder))
    if "participants" in tables:
        one_row_each(tables["participants"], "participants.csv")
    studies_agree(tables)
    for name, key in _ROW_KEYS.items():
        if name in tables:
            _one_row_per_key(tables[name], name, key)
    return tables


# What makes a row of these tables one of its kind (the database's unique constraints: a
# judgement per participant and dialogue, a live session per participant and step, a
# comparison per participant, step and order).
_ROW_KEYS = {
    "judgements": ("participant_id", "dialogue"),
    "claim_judgements": ("participant_id", "position"),
    "comparisons": ("participant_id", "instance_set", "instance", "order"),
}


def _one_row_per_key(df: pd.DataFrame, name: str, key: tuple[str, ...]) -> None:
    """Raise a ValueError when two rows share their key but differ elsewhere (rows the same in
    every cell were dropped at reading): a file joined in twice with an edit in between was
    counted twice (design A's analysed judgements 131 -> 149)."""
    if not set(key) <= set(df.columns):
        return
    columns = [*key, "study"] if "study" in df.columns else list(key)
    listed = df.dropna(subset=list(key))
    keyed = listed[columns].astype("string").fillna("")  # a blank study is a value here
    clash = _first_clash(listed, keyed.duplicated(keep=False), lambda i: (keyed == keyed.loc[i]).all(axis=1))
    if clash is None:
        return
    rows, differing = clash
    first = rows.iloc[0]
    which = ", ".join(f"{c} {first[c]}" for c in key[1:])
    raise ValueError(
        f"{name}.csv has {_count(len(rows), 'row')} for participant {first['participant_id']} ({which}) "
        f"with different values (in {', '.join(differing[:5])}), where the export writes one: likely "
        "the file joined in twice, edited in between. Keep one."
    )


def _first_clash(listed: pd.DataFrame, twice: pd.Series, same_as) -> tuple[pd.DataFrame, list[str]] | None:
    """The rows of the first key found more than once (`same_as(index)`: the rows sharing that
    row's key), and the columns in which they differ; None when no key repeats."""
    if not twice.any():
        return None
    rows = listed[same_as(twice.idxmax())]
    return rows, [c for i, c in enumerate(rows.columns) if rows.iloc[:, i].astype(str).nunique() > 1]


def studies_agree(tables: Mapping[str, pd.DataFrame]) -> None:
    """Raise a ValueError when the tables of several studies cannot be joined by study: a table
    without `study` (or with rows without one) beside another that holds two or more studies,
    or a study that participants.csv does not list. Participant ids start again in each
    study, so those rows were joined to whichever study's participant had their id: their
    status, exclusions and answers (a merged design A analysed 131 of 268 participants).
    Tables of dialogues and LLM answers (no participant ids) are held to the same: a dialogue
    key repeats across studies too (two studies' LLM judgements merged without `study` were
    taken for reruns, half the answers dropped), and another study's file put beside this one's
    was analysed as this study's.

    Beside one study, a table with some rows without a study is refused too (a table with none
    at all is joined by id alone, `uses_study`): the export writes every row's study, and whose
    those are cannot be told. Such a participant had been left out of the headcount and the
    exclusion flow while their answers were analysed (20 in the flow, 40 analysed); read as the
    one study, another study's rows joined this study's people with the same ids. (The same
    participant listed with and without the study is named earlier, by `one_row_each`.)"""
    studies = {name: set(df["study"].dropna()) for name, df in tables.items() if "study" in df.columns}
    several = next((name for name, found in studies.items() if len(found) > 1), None)
    if several is not None:
        for name, df in tables.items():
            if df.empty:
                continue
            without = len(df) if "study" not in df.columns else int(df["study"].isna().sum())
            if without:
                rows = (
                    "has no `study` column"
                    if "study" not in df.columns
                    else f"has {_count(without, 'row')} without a study"
                )
                raise ValueError(
                    f"{name}.csv {rows}, while {several}.csv holds {len(studies[several])} studies "
                    f"({', '.join(sorted(studies[several])[:4])}): ids start again in each study, "
                    "so its rows cannot be told apart or joined to their participants. Merge the files "
                    "as exported, every row with its study, or analyse one study at a time."
                )
    named = set().union(*studies.values())
    if len(named) == 1:
        for name, df in tables.items():
            blank = df["study"].isna() if "study" in df.columns else None
            if blank is not None and blank.any() and not blank.all():
                raise ValueError(
                    f"{name}.csv has {_count(int(blank.sum()), 'row')} without a study beside rows of "
                    f"study {next(iter(named))!r}: the export writes every row's study, and whose these "
                    "are cannot be told (ids start again in each study). Fill in their study, or leave "
                    "them out."
                )
    listed = studies.get("participants")
    if listed is None:
        return
    for name, found in studies.items():
        df = tables[name]
        if "participant_id" in df.columns:  # the rows of a participant (design C's moves: agents' too)
            found = set(df.loc[df["participant_id"].notna(), "study"].dropna())
        elif not listed:
            continue  # LLM answers or dialogues of a study that has no participant yet
        unlisted = sorted(found - listed)
        if unlisted:
            alike = [s for s in listed if s.lower() == unlisted[0].lower()]
            hint = f" (it lists {alike[0]!r}: spelled alike, the same study?)" if alike else ""
            raise ValueError(
                f"{name}.csv has rows of study {unlisted[0]!r}, which participants.csv does not list"
                f"{hint}: another study's file, whose rows would not be joined to their participants? "
                "Use one spelling per study, and participants.csv of every study analysed."
            )


def one_row_each(
    df: pd.DataFrame, file: str, id_column: str = "participant_id", noun: str = "participant"
) -> None:
    """Raise a ValueError naming the row's subject (a participant, a dialogue) when one is
    listed twice with different values (rows repeated exactly were dropped at reading). The
    export writes one row each, so the table would say two things of them, and which one
    counts would depend on row order; or, for files merged from several studies, each would
    be counted twice."""
    if id_column not in df.columns:
        return
    listed = df[df[id_column].notna()]
    with_study = uses_study(listed)
    if with_study:
        # Files of several studies merged, one copy with its `study` cells emptied: the same
        # ids once with a study and once without would otherwise be two subjects.
        blank = listed["study"].isna()
        both = listed.loc[blank, id_column].isin(listed.loc[~blank, id_column])
        if both.any():
            one = listed.loc[blank, id_column][both].iloc[0]
            studies = listed.loc[~blank & (listed[id_column] == one), "study"].unique()
            raise ValueError(
                f"{file} lists {noun} {one} of study {studies[0]!r} and again without a study: likely "
                "several studies' files merged, one of them with its `study` column emptied. Merge the "
                "files as exported, every row with its study."
            )
    keys = subject_key(listed, id_column, with_study)
    clash = _first_clash(listed, keys.duplicated(keep=False), lambda i: keys == keys[i])
    if clash is None:
        return
    rows, differing = clash
    who = f"{noun} {rows[id_column].iloc[0]}"
    if with_study:
        who += f" of study {rows['study'].iloc[0]!r}"
        cause = f"likely the study's file joined in twice, edited in between: keep one row per {noun}."
    else:
        cause = (
            f"likely several studies' files merged without their `study` column, whose {noun} ids "
            f"overlap. Merge the files as exported, with their `study` column ({noun}s are then "
            f"told apart by study and id), or keep one row per {noun}."
        )
    times = "twice" if len(rows) == 2 else f"{len(rows)} times"
    raise ValueError(
        f"{file} lists {who} {times} with different values (in {', '.join(differing[:5])}): {cause}"
    )


def read_csv(path: Path) -> pd.DataFrame:
    """One export table as text cells, as the export wrote it or as a spreadsheet saved it
    again: a byte-order mark is skipped, semicolons between the columns are read as such (a
    spreadsheet in a language that writes decimal commas), as are tabs (a spreadsheet's "text,
    tab-separated" or a copy from one), and Excel's first line `sep=;` is taken at its word; rows
    left wholly blank are dropped. Rows that repeat the column names (files joined one after
    another) and rows that repeat another row exactly (every cell equal, surrounding spaces
    aside: a file joined in twice) are dropped, and said in the frame's notes: the export never
    writes either, as every table's rows differ in their ids. Text that is not UTF-8 is refused
    with what to do, rather than guessed at."""
    if (not_text := _not_text(path)) is not None:
        raise ValueError(not_text)
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            header = f.readline()
            declared = _SEP_LINE.match(header)
            if declared:
                header = f.readline()
    except UnicodeDecodeError:
        raise ValueError(_not_utf8(path)) from None
    if header.lstrip().startswith(("{", "[")):
        raise ValueError(
            f"{path.name} holds JSON, not CSV: use the CSV export (the API's JSON pages are another "
            "format), or the .csv link beside it"
        )
    if declared:
        separator = declared.group(1)
    elif "\t" in header and "," not in header and ";" not in header:
        separator = "\t"
    else:
        separator = ";" if ";" in header and "," not in header else ","
    try:
        raw = pd.read_csv(
            path,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            encoding="utf-8-sig",
            sep=separator,
            skiprows=1 if declared else None,
            skip_blank_lines=False,  # dropped below, keeping the rows' numbers
        )
    except UnicodeDecodeError:
        raise ValueError(_not_utf8(path)) from None
    except pd.errors.EmptyDataError:
        raise ValueError(
            f"{path.name} is empty (not even the row of column names): export the table again, "
            "or leave the file out"
        ) from None
    except pd.errors.ParserError as error:
        raise ValueError(f"{path.name}: not a CSV file of the export's shape ({error})") from None
    raw.columns = [str(c).strip() for c in raw.columns]  # "participant_id " as a spreadsheet may save it
    raw = raw.dropna(how="all")
    notes: list[str] = []
    if len(raw) and raw.iloc[:, -1].isna().any():  # a short row's missing cells are read as blanks
        notes += _short_rows(path, separator, 2 if declared else 1, raw.shape[1])
    text = raw.fillna("").apply(lambda column: column.str.strip()).to_numpy(dtype=object)
    names = next(csv.reader([header], delimiter=separator), [])
    names = [n.strip() for n in names] if len(names) == raw.shape[1] else list(raw.columns)
    twice = sorted({n for n in names if names.count(n) > 1 and n})
    if twice:  # which of the two would count? (pandas renames the second 'valid.1'; padded ones collided)
        raise ValueError(
            f"{path.name} has two columns named {twice[0]!r} (spaces around a name aside): keep one, "
            "as exported"
        )
    # Another file's header: as this one's, or with its own byte-order mark (two "CSV UTF-8"
    # files joined one after another).
    bare = text.copy()
    if bare.size:  # a byte-order mark can only open a line: the first cell
        bare[:, 0] = [cell.lstrip("\ufeff") for cell in bare[:, 0]]
    repeated = (bare == np.array(names, dtype=object)).all(axis=1) if len(raw) else np.zeros(0, bool)
    if len(raw):
        known = set(names) - {""}
        named = pd.DataFrame(bare).isin(known).to_numpy().sum(axis=1)
        header_like = named >= max(2, len(known) // 2)
        shuffled = header_like & ~repeated
        if shuffled.any():
            line = int(raw.index[np.flatnonzero(shuffled)[0]]) + 2 + (1 if declared else 0)
            raise ValueError(
                f"{path.name}: row {line} holds column names in another order or of other columns: "
                "files of different shapes joined one after another, whose rows below it do not "
                "line up with the columns. Join the files by column name (or export them again "
                "together)."
            )
    if repeated.any():
        notes.append(
            f"{path.name}: {_count(int(repeated.sum()), 'row')} repeating the column names (files joined one "
            "after another) dropped."
        )
    same = pd.DataFrame(text).duplicated().to_numpy() & ~repeated
    if same.any():
        notes.append(
            f"{path.name}: {_count(int(same.sum()), 'row')} the same as an earlier row in every cell "
            "dropped, each row counted once (the same file joined in twice?)."
        )
    raw = raw[~repeated & ~same]
    # As a spreadsheet numbers them; an array (pandas copies `attrs` with every operation on the
    # frame and its columns: a list as long as the table made reports four times slower).
    rows = np.asarray(raw.index + 2 + (1 if declared else 0), dtype=np.int64)
    raw = raw.reset_index(drop=True)
    for column in raw.columns:  # the export's guard against spreadsheet formulas, undone
        cells = raw[column]
        guarded = cells.str.startswith("'", na=False)
        if guarded.any():
            raw.loc[guarded, column] = cells[guarded].map(unguarded)
    raw.attrs["notes"] = notes  # carried on by `typed`
    raw.attrs["rows"] = rows  # each row's number in the file, for errors (carried on by `typed`)
    return raw


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def unguarded(cell: str) -> str:
    """A cell as written before the export guarded it against spreadsheet formulas
    (common.downloads._safe, which this package may not import): one apostrophe off a cell
    that, without its leading apostrophes, starts like a formula. Read as guarded, "=x" came
    back "'=x": a label no longer matched its option, and the report showed the apostrophe."""
    if cell[:1] == "'" and cell.lstrip("'")[:1] in FORMULA_STARTS:
        return cell[1:]
    return cell


def _short_rows(path: Path, separator: str, skip: int, width: int) -> list[str]:
    """What pandas does not tell: rows with fewer cells than the file has columns, which it
    reads with blanks for the cells missing at the end. A spreadsheet may leave out a row's
    empty cells at its end (said, and read so); a last row that stops short with no line end
    after it is a file cut off in the middle (a download or a copy cut short), whose last cell
    may be cut too: refused. One pass of the csv module, as pandas splits the cells."""
    try:
        short, first, last = _count_short_rows(path, separator, skip, width)
    except csv.Error:  # a cell over the csv module's field size limit (131,072 characters)
        with _FIELD_LIMIT:
            before = csv.field_size_limit(sys.maxsize)
            try:
                short, first, last = _count_short_rows(path, separator, skip, width)
            finally:
                csv.field_size_limit(before)
    if last is not None:
        with path.open("rb") as f:
            f.seek(-1, 2)
            if f.read(1) not in (b"\n", b"\r"):
                line, cells = last
                raise ValueError(
                    f"{path.name} ends in the middle of line {line} ({cells} of {width} cells, no line "
                    "end after it): the file was cut short, and its last cell may be cut too. Download "
                    "or copy the export again."
                )
    if not short:
        return []
    line, cells = first
    return [
        f"{path.name}: {_count(short, 'row')} with fewer cells than the {width} columns (the first at "
        f"line {line}, {cells} cells), read with blanks for the cells missing at the end. A spreadsheet "
        "may leave out empty cells at the end of a row; if not, the row was cut short: check it."
    ]


def _count_short_rows(path: Path, separator: str, skip: int, width: int):
    """(rows with fewer cells than `width`, (line, cells) of the first, of the last row if it
    is one)."""
    short = 0
    first = None
    last: tuple[int, int] | None = None
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = csv.reader(f, delimiter=separator)
        for _ in range(skip):
            next(rows, None)
        for row in rows:
            last = None
            if len(row) < width and any(cell.strip() for cell in row):
                short += 1
                last = (rows.line_num, len(row))
                if first is None:
                    first = last
    return short, first, last


_FIELD_LIMIT = threading.Lock()  # the csv module's field size limit is the process's


_SEP_LINE = re.compile(r'^"?sep=([^\r\n"])"?\s*$')  # Excel's first line naming the separator


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# What a file that is not text at all starts with: named, rather than called "not UTF-8".
_NOT_CSV = (
    (b"PK\x03\x04", "a zip archive or an Excel workbook (.xlsx)"),
    (b"\xd0\xcf\x11\xe0", "an old Excel workbook (.xls)"),
    (b"%PDF", "a PDF document"),
)


def _not_text(path: Path) -> str | None:
    """What a file that is not text at all is (by its first bytes), or None."""
    with path.open("rb") as f:
        start = f.read(8)
    for magic, kind in _NOT_CSV:
        if start.startswith(magic):
            return (
                f"{path.name} is {kind}, not a CSV file: open it in the spreadsheet and save it as "
                "'CSV UTF-8 (comma delimited)', or use the file as exported"
            )
    return None


def _not_utf8(path: Path) -> str:
    return (
        f"{path.name} is not UTF-8 text (a spreadsheet saved it in another encoding): save it "
        "again as 'CSV UTF-8 (comma delimited)', or use the file as exported"
    )


def typed(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` with the known columns of `table` converted: flags to nullable
    booleans, whole numbers to Int64 (float if a value is fractional), numbers to float,
    timestamps to UTC datetimes, text to strings; empty cells become NA. Unknown columns are
    left alone. Idempotent: typing a typed frame changes nothing."""
    return typed_by(SCHEMAS, table, df, "known tables")


def typed_by(
    schemas: Mapping[str, Mapping[str, str]], table: str, df: pd.DataFrame, known: str
) -> pd.DataFrame:
    """`typed` for the tables of `schemas` (design C's and the LLM participants' modules keep
    their own); `known` names them in the error for an unknown table. What was read otherwise
    than exported goes to the copy's notes (see `notes_of`): reading's notes, then typing's."""
    if table not in schemas:
        raise ValueError(f"unknown table {table!r}; {known}: {', '.join(schemas)}")
    known = schemas[table]
    for column in df.columns:
        if column in known:
            continue
        meant = [c for c in known if _spelling(c) == _spelling(column) and c not in df.columns]
        if meant:  # an optional column under another spelling was ignored: its exclusions too
            raise ValueError(
                f"table {table!r} has no column {meant[0]!r}; there is {column!r}: rename it "
                f"{meant[0]!r}, as exported"
            )
    rows = df.attrs.get("rows")
    out = df.copy()
    out.attrs.pop("rows", None)  # used here only: not copied along with every column below
    notes: list[str] = list(df.attrs.get("notes", ()))
    if rows is not None and (len(rows) != len(df) or not df.index.equals(pd.RangeIndex(len(df)))):
        rows = None  # filtered or joined since it was read: the numbers no longer line up
    for column, kind in known.items():
        if column in out.columns:
            try:
                out[column] = _convert(out[column], kind, table, column, notes)
            except CellError as error:
                where = (
                    f" (row {rows[error.at]} of {table}.csv, as a spreadsheet numbers it)"
                    if rows is not None
                    else ""
                )
                raise ValueError(f"{error}{where}") from None
            if column in _LABELS and kind == "str":
                _alike(out[column], table, column, notes)
    out.attrs["notes"] = notes
    return out


class CellError(ValueError):
    """A value a column cannot hold, with its row (`at`: the frame's index label)."""

    def __init__(self, message: str, at):
        super().__init__(message)
        self.at = at


# Text columns whose values name groups the figures count apart: conditions, belief groups,
# interlocutors, agents, judges.
_LABELS = {
    "condition", "case", "variant", "group", "domain", "topic", "instance_set",
    "interlocutor_1", "interlocutor_2", "winner_interlocutor", "pro_agent", "con_agent", "judge",
    "rater", "strategy", "debater", "debater_config",
}  # fmt: skip


_NAMES = {  # and lists of codes
    "study", "study_sha256", "dialogue", "batch", "agent", "winner_agent", "loser_agent", "model",
    "exclusion_reasons", "flags",
}  # fmt: skip


def _alike(values: pd.Series, table: str, column: str, notes: list[str]) -> None:
    """Say when a label column has values that differ only in case or spaces ('Mainstream' and
    'mainstream', 'G4M' and 'G 4M'): they are counted as two groups, as written; likely one,
    typed twice."""
    present = pd.Series(values.dropna().astype(str).unique())
    if len(present) < 2:
        return
    folded = present.str.lower().str.replace(r"\s+", "", regex=True)
    clash = present[folded.duplicated(keep=False)]
    if len(clash):
        first = folded[clash.index[0]]
        spellings = sorted(present[folded == first])
        notes.append(
            f"{table}.csv, column {column!r}: values that differ only in case or spaces "
            f"({' and '.join(repr(v) for v in spellings[:3])}) are counted as different groups; "
            "write one the same way everywhere if they are one."
        )


def notes_of(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """What reading the tables noted (columns read otherwise than exported), for the report's
    warnings: read right after `read_tables`, as pandas does not carry them through every
    operation."""
    return [note for frame in tables.values() for note in frame.attrs.get("notes", ())]


def last_answers(
    df: pd.DataFrame, keys: list[str], table: str, answer: list[str], notes: list[str] | None = None
) -> pd.DataFrame:
    """One row per `keys`, kept in row order: when several jobs answered the same item (a rerun
    of the LLM judges or raters), the last one by `finished_at` counts. Which is last must be
    known, or the figure would depend on row order: a ValueError when rows of one key differ in
    their `answer` columns but have the same `finished_at` (or none, without the column), and
    when a key repeats while `finished_at` could not be read as times (a spreadsheet's
    re-saved dates, kept as text, sort as text: 01/02 before 05/01)."""
    out = df.copy()
    out["_row"] = range(len(out))
    repeated = out.duplicated(keys, keep=False)
    if repeated.any():
        timed = "finished_at" in out.columns
        if timed and not pd.api.types.is_datetime64_any_dtype(out["finished_at"]):
            raise ValueError(
                f"{table}.csv: column 'finished_at' could not be read as times, and "
                f"{_count(int(out[repeated].drop_duplicates(keys).shape[0]), 'item')} with more than "
                "one answer (a rerun): which answer counts cannot be told. Use the file as "
                "exported, or write finished_at as the export does (2026-01-02T10:00:00+00:00)."
            )
        when = [*keys, "finished_at"] if timed else keys
        rows = out[repeated]
        tied = rows[rows.duplicated(when, keep=False)]
        if len(tied):
            shown = tied[[*when, *answer]].astype("string").fillna("")
            differ = shown.groupby(when, dropna=False)[answer].nunique().gt(1).any(axis=1)
            if differ.any():
                first = differ[differ].index[0]
                first = first if isinstance(first, tuple) else (first,)
                item = ", ".join(f"{k} {v}" for k, v in zip(when, first) if v != "")
                raise ValueError(
                    f"{table}.csv has two different answers for {item}, at the same time or none: "
                    "which counts cannot be told (likely the file joined in twice, edited in "
                    "between). Keep one."
                )
    order = ["finished_at", "_row"] if "finished_at" in out.columns else ["_row"]
    ordered = out.sort_values(order, na_position="first", kind="stable")
    kept = ordered.drop_duplicates(keys, keep="last")
    if notes is not None and len(kept) < len(out):
        # Said, with what a rerun under the same label changed: a second job giving labels J1
        # and J2 to other models replaced the first job's answers without a word.
        replaced = ordered[ordered.duplicated(keys, keep="last")]
        note = (
            f"{table}.csv: {_count(len(replaced), 'earlier answer')} of an item answered again "
            "(a rerun) left out: the last by finished_at counts."
        )
        if "model" in out.columns:
            last_model = kept.set_index(keys)["model"]
            before = replaced.set_index(keys)["model"].astype("string")
            swapped = before[before.ne(last_model.reindex(before.index).astype("string")).fillna(False)]
            if len(swapped):
                label = swapped.index[0]
                label = label if isinstance(label, tuple) else (label,)
                where = ", ".join(f"{k} {v}" for k, v in zip(keys, label) if k != "study" and v == v)
                note += (
                    f" {len(swapped)} of them came from another model under the same label "
                    f"({where}: {swapped.iloc[0]} replaced by {last_model.loc[swapped.index[0]]}): to "
                    "compare the models, give each its own judge label."
                )
        notes.append(note)
    return kept.sort_values("_row", kind="stable").drop(columns="_row").reset_index(drop=True)


def named_rows(
    df: pd.DataFrame, table: str, columns: Iterable[str], notes: list[str], said: str | None = None
) -> pd.DataFrame:
    """The rows whose identifying `columns` all have a value; the others are left out and said
    in `notes` (`said`: how the note names the columns). A blank judge had been a judge named
    '', a blank session one human of many sessions."""
    columns = list(columns)
    blank = pd.Series(False, index=df.index)
    for column in columns:
        blank |= df[column].isna() | (df[column].astype(str).str.strip() == "")
    if blank.any():
        notes.append(
            f"{table}.csv: {int(blank.sum())} row(s) without their {said or ', '.join(columns)} left out: "
            "the export writes every one."
        )
    return df[~blank]


def same_in_each(df: pd.DataFrame, table: str, key: str, noun: str, columns: Iterable[str]) -> None:
    """Raise a ValueError when the rows of one (study, `key`) give different values in one of
    `columns`, which the export writes the same in each of them (what a session or a dialogue
    is): they were edited, and a figure took whichever row came first. Missing cells are not
    compared."""
    for column in columns:
        varied = df.groupby(["study", key])[column].nunique()
        if (varied > 1).any():
            study, value = varied[varied > 1].index[0]
            values = sorted(set(df.loc[(df["study"] == study) & (df[key] == value), column].dropna()))
            raise ValueError(
                f"{table}.csv: the rows of {noun} {value}{f' of study {study!r}' if study else ''} "
                f"disagree on {column} ({', '.join(repr(v) for v in values)}), which the export writes "
                "the same in each: likely edited. Make them agree."
            )


def same_where_told(left: pd.Series, right: pd.Series, codes: Iterable[str]) -> pd.Series:
    """Whether two code columns agree (the answer and the truth, the chosen side and the
    culprit's), as a nullable boolean: missing where either holds none of `codes`."""
    codes = list(codes)
    told = left.isin(codes) & right.isin(codes)
    return (left == right).astype("boolean").where(told, pd.NA)


def within(keep: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """The mask over a whole table of the rows `chosen` marks among those `keep` marks."""
    mask = keep.copy()
    mask[np.flatnonzero(keep)] = chosen
    return mask


def flag_as_told(derived: pd.Series, given: pd.Series) -> tuple[pd.Series, int]:
    """A flag the export derives from other columns (an answer's correctness from its side and
    the culprit's): as those columns tell (`derived`, a nullable boolean, missing where they do
    not), else as written (`given`). Also how many written values the columns contradict."""
    clashes = derived.notna() & given.notna() & (given != derived).fillna(False)
    return derived.fillna(given), int(clashes.sum())


def require(df: pd.DataFrame, table: str, columns: Iterable[str], purpose: str = "") -> None:
    """Raise a ValueError naming the table and the first missing column, and the column it
    may be under another spelling (Participant_Id, participant id)."""
    for column in columns:
        if column not in df.columns:
            why = f" (needed for {purpose})" if purpose else ""
            near = [c for c in df.columns if _spelling(c) == _spelling(column)]
            hint = f"; there is {near[0]!r}: rename it {column!r}, as exported" if near else ""
            raise ValueError(f"table {table!r} has no column {column!r}{why}{hint}")


def _spelling(name) -> str:
    return re.sub(r"[\s_-]+", "_", str(name).strip().lower())


def require_table(tables: Mapping[str, pd.DataFrame], table: str, purpose: str = "") -> pd.DataFrame:
    if table not in tables or tables[table] is None:
        why = f" (needed for {purpose})" if purpose else ""
        raise ValueError(f"table {table!r} is missing{why}")
    return tables[table]


def has(df: pd.DataFrame | None, *columns: str) -> bool:
    """True when the frame exists and every column is present with at least one value."""
    return df is not None and all(c in df.columns and df[c].notna().any() for c in columns)


def flag(series: pd.Series) -> pd.Series:
    """A flag column as plain booleans, NA counting as False."""
    return series.astype("boolean").fillna(False).astype(bool)


def uses_study(*frames: pd.DataFrame | None) -> bool:
    """Participants are identified by (study, participant_id) when every frame has a study."""
    present = [f for f in frames if f is not None]
    return bool(present) and all("study" in f.columns and f["study"].notna().any() for f in present)


def participant_key(df: pd.DataFrame, with_study: bool) -> pd.Series:
    """One string per row identifying its participant (across studies when `with_study`)."""
    return subject_key(df, "participant_id", with_study)


def subject_key(df: pd.DataFrame, id_column: str, with_study: bool) -> pd.Series:
    """One string per row identifying what `id_column` names (across studies when `with_study`:
    ids start again in each study)."""
    ids = df[id_column].astype("string").fillna("")
    if with_study:
        return (df["study"].astype("string").fillna("") + "\x1f" + ids).astype(str)
    return ids.astype(str)


def analysable(
    df: pd.DataFrame,
    table: str,
    participants: pd.DataFrame | None = None,
    status_column: str = "participant_status",
    *,
    unsaid_counts: bool = False,
) -> pd.Series:
    """Boolean mask of the rows of completed, non-excluded participants.

    Both places that say so count: the row's own columns (the export copies the participant's
    status and `excluded` flag into each row) and the participants table, when it is given and
    lists the row's participant. A row counts only if every source says completed and none says
    excluded, so an analyst who excludes participants in participants.csv alone (or in the
    design table alone) excludes them from the figures as from the exclusion flow; before,
    the row's own columns won and such exclusions changed the flow table only. A row no source
    gives a status for is not analysed, unless `unsaid_counts` (the caller has its own word on
    it, as the comparisons' `valid`)."""
    statuses: list[np.ndarray] = []  # per source: the status, or None where it does not say
    exclusions: list[np.ndarray] = []
    if status_column in df.columns:
        statuses.append(_texts(df[status_column]))
    if "excluded" in df.columns:
        exclusions.append(_flags_or_none(df["excluded"]))
    joinable = participants is not None and "participant_id" in participants.columns
    if joinable and (not statuses or not exclusions or "participant_id" in df.columns):
        require(df, table, ["participant_id"], "joining with participants")
        with_study = uses_study(df, participants)
        p = participants.assign(_key=participant_key(participants, with_study)).drop_duplicates("_key")
        p = p.set_index("_key")
        keys = participant_key(df, with_study)
        if "status" in p.columns:
            statuses.append(_texts(keys.map(p["status"])))
        if "excluded" in p.columns:
            exclusions.append(_flags_or_none(keys.map(p["excluded"])))
    if not statuses:
        raise ValueError(
            f"table {table!r} has no column {status_column!r} (and no participants table with "
            "participant_id and status to take it from)"
        )
    if not exclusions:
        raise ValueError(
            f"table {table!r} has no column 'excluded' (and no participants table with participant_id "
            "and excluded to take it from)"
        )
    completed = np.ones(len(df), dtype=bool)
    said = np.zeros(len(df), dtype=bool)
    for status in statuses:
        known = status != None  # noqa: E711 (elementwise on an object array)
        completed &= ~known | (status == "completed")
        said |= known
    if not unsaid_counts:
        completed &= said  # a participant no source gives a status for is not analysed
    excluded = np.zeros(len(df), dtype=bool)
    for flags in exclusions:
        excluded |= flags == True  # noqa: E712 (elementwise; None where the source does not say)
    return completed & ~excluded


def _texts(series: pd.Series) -> np.ndarray:
    """The values as text, None where missing (an object array)."""
    values = series.astype(object).to_numpy()
    return np.array([None if _missing(v) else str(v) for v in values], dtype=object)


def _flags_or_none(series: pd.Series) -> np.ndarray:
    """The flags as True/False, None where missing (an object array)."""
    values = _to_flag(pd.Series(series.to_numpy(), dtype=object)).astype(object).to_numpy()
    return np.array([None if _missing(v) else bool(v) for v in values], dtype=object)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


# --- conversions ---------------------------------------------------------------------------


# How other tools write a missing value: R's write.csv (NA), spreadsheets (#N/A, N/A), SQL
# tools (NULL), pandas' own repr (nan). Read as empty in columns of numbers, flags, times and
# codes, where none of them can be a value. In columns of labels and names only R's NA and the
# tools' #N/A and NULL: a file written back by R has NA for every empty label (a baseline's
# variant). Free text keeps them: "NA" is an answer a participant may give.
_MISSING_MARKERS = frozenset({"NA", "N/A", "#N/A", "NULL", "nan", "NaN"})
_TEXT_MARKERS = frozenset({"NA", "#N/A", "NULL"})


def _missing_markers(
    series: pd.Series, table: str, column: str, notes: list[str] | None, markers: frozenset[str]
) -> pd.Series:
    if not (series.dtype == object or pd.api.types.is_string_dtype(series.dtype)):
        return series
    s = series.astype(object)
    marked = s.isin(markers)  # exactly as the tools write them
    if not marked.any():
        return series
    if notes is not None:
        written = sorted(set(s[marked]))
        notes.append(
            f"{table}.csv, column {column!r}: {_count(int(marked.sum()), 'cell')} "
            f"{' or '.join(repr(w) for w in written)} read as empty (a missing value as another tool "
            "writes it)."
        )
    return s.where(~marked, None)


def _blank_to_na(series: pd.Series) -> pd.Series:
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        s = series.astype(object)
        return s.where(~s.map(lambda v: isinstance(v, str) and v.strip() == ""), None)
    return series


def _convert(
    series: pd.Series, kind: str, table: str, column: str, notes: list[str] | None = None
) -> pd.Series:
    try:
        if kind != "str":
            series = _missing_markers(series, table, column, notes, _MISSING_MARKERS)
        elif column in _LABELS or column in _NAMES:
            series = _missing_markers(series, table, column, notes, _TEXT_MARKERS)
        if kind in ("str", "code"):
            s = _blank_to_na(series)
            text = s.astype(object).where(s.notna(), None).map(_text)
            if kind == "code":
                text = _codes(text, table, column, notes)
            return text.astype("str")
        if kind == "flag":
            return _to_flag(series)
        if kind == "id":
            return _to_id(series)
        if kind in ("int", "float"):
            numbers = _to_number(series, kind)
            if column.endswith("confidence") and table in _RATINGS:
                _rating(numbers, *_RATINGS[table])
            elif column.endswith("confidence"):
                _percent(numbers, table, column, notes)
            return numbers
        if kind == "datetime":
            return _to_timestamps(series, table, column, notes)
    except CellError as error:
        raise CellError(f"table {table!r}, column {column!r}: {error}", error.at) from None
    except (ValueError, TypeError) as error:
        raise ValueError(f"table {table!r}, column {column!r}: {error}") from None
    raise AssertionError(kind)


# A date as a spreadsheet shows and saves it again: 30/11/2026 12:00, 11/30/26 9:05 PM,
# 30.11.2026 12:00:00, 30-11-2026 (day and month in either order, decided per column).
_SHEET_DATE = re.compile(
    r"^(\d{1,2})[./-](\d{1,2})[./-](\d{4}|\d{2})"
    r"(?:[ T]+(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?\s*([AaPp][Mm])?)?$"
)
_SHEET_SERIAL = re.compile(r"^\d{5}(?:[.,]\d+)?$")  # days since 1899-12-30 (Excel's, LibreOffice's)
_SHEET_EPOCH = pd.Timestamp("1899-12-30", tz="UTC")
_STAMPS = "datetime64[us, UTC]"  # as pandas reads ISO 8601


def _to_timestamps(series: pd.Series, table: str, column: str, notes: list[str] | None) -> pd.Series:
    """Timestamps as the export writes them (ISO 8601, UTC). A column a spreadsheet saved again
    in its own way (day/month/year, month/day/year, serial day numbers) is read as that, its
    times taken as UTC, as exported; one it cannot be read as either is kept as text. Either
    is said in `notes`: no figure of a report is computed from a timestamp, so neither stops
    an analysis."""
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        return series.dt.tz_convert("UTC")
    s = _blank_to_na(series)
    try:
        return pd.to_datetime(s, utc=True, format="ISO8601")
    except (ValueError, TypeError, OverflowError):
        pass
    text = s.dropna().astype(str).str.strip()
    read, how = _sheet_timestamps(text)
    where = f"{table}.csv, column {column!r}"
    if read is None:
        if notes is not None:
            odd = text[~text.map(_iso_like)]
            example = (odd if len(odd) else text).iloc[0]
            notes.append(
                f"{where}: not read as timestamps, {how} (for example {example!r}); kept as text. "
                "No figure of the report uses it; export the data again to have it as exported."
            )
        return s.astype(object).where(s.notna(), None)
    if notes is not None:
        notes.append(f"{where}: timestamps as a spreadsheet saves them, read as {how} (times taken as UTC).")
    out = pd.Series(pd.NaT, index=s.index, dtype=_STAMPS)
    out.loc[read.index] = read
    return out


def _iso_like(value: str) -> bool:
    try:
        pd.to_datetime(value, utc=True, format="ISO8601")
    except (ValueError, TypeError, OverflowError):
        return False
    return True


def _sheet_timestamps(text: pd.Series) -> tuple[pd.Series | None, str]:
    """(the values as UTC timestamps, how they were read), or (None, why not)."""
    if text.empty:
        return None, "no values"
    if text.map(lambda v: bool(_SHEET_SERIAL.match(v))).all():
        days = pd.to_numeric(text.str.replace(",", ".", regex=False))
        if ((days > 20_000) & (days < 80_000)).all():  # 1954 to 2119
            stamps = _SHEET_EPOCH + pd.to_timedelta(days, unit="D")
            return stamps.dt.round("s").astype(_STAMPS), "day numbers since 1899-12-30"
        return None, "numbers that are not day numbers of a recent date"
    parts = text.map(_SHEET_DATE.match)
    if not all(parts) and not all(m or _iso_like(v) for v, m in zip(text, parts, strict=True)):
        return None, "not in a date format known"  # (ISO 8601 and a spreadsheet's mixed are read)
    first = [int(m.group(1)) for m in parts if m]
    second = [int(m.group(2)) for m in parts if m]
    day_first = any(v > 12 for v in first)
    month_first = any(v > 12 for v in second)
    if day_first and month_first:
        return None, "day and month in both orders"
    if not day_first and not month_first:
        dots = any("." in m.group(0)[:6] for m in parts if m)
        if not dots:
            return None, "day and month could be either way round (no day after the 12th)"
        day_first = True  # 01.02.2026 is day.month.year wherever dots are written
    out = {}
    for index, value, m in zip(text.index, text, parts, strict=True):
        if not m:
            out[index] = pd.to_datetime(value, utc=True, format="ISO8601")
            continue
        a, b, year, hour, minute, sec, frac, half = m.groups()
        day, month = (int(a), int(b)) if day_first else (int(b), int(a))
        year = int(year) + (2000 if len(year) == 2 else 0)
        hour = int(hour or 0)
        if half:
            if not 1 <= hour <= 12:
                return None, f"an hour of {hour} with AM/PM"
            hour = hour % 12 + (12 if half.lower() == "pm" else 0)
        minute, sec, micro = int(minute or 0), int(sec or 0), int((frac or "0").ljust(6, "0"))
        try:
            out[index] = pd.Timestamp(year, month, day, hour, minute, sec, micro, tz="UTC")
        except ValueError:
            return None, "a day or time that does not exist"
    order = "day/month/year" if day_first else "month/day/year"
    return pd.Series(out, dtype=_STAMPS), order


def _text(value):
    """A text cell without the spaces around it (a spreadsheet or a hand edit may add them)."""
    if _missing(value):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


# Tables whose confidence is a rating, not a percentage: design D's 1 (very unsure) to 5 (very
# confident), debates/models/pairwise.py.
_RATINGS = {"comparisons": (1, 5)}


def _rating(numbers: pd.Series, low: int, high: int) -> None:
    """A rating off its scale (another study's 1-7 scale merged in) is refused: its agreement
    figures would count it as one more level."""
    values = numbers.dropna().astype(float)
    outside = values[~np.isfinite(values) | (values < low) | (values > high) | (values % 1 != 0)]
    if len(outside):
        raise CellError(
            f"{outside.iloc[0]:g} is not a confidence rating from {low} to {high} (the form's scale): "
            "another study's scale? Convert it, or leave those rows out",
            outside.index[0],
        )


def _percent(numbers: pd.Series, table: str, column: str, notes: list[str] | None) -> None:
    """A confidence is a percentage (0-100), as every form of the platform asks it but design
    D's rating (`_RATINGS`): a value
    outside, or a column of fractions within 0-1 (another study's 0-1 scale), is refused, since
    Brier scores and calibration would otherwise clip or misread it without a word. A column
    of many whole numbers none above 10 (another study's 1-10 or 1-7 scale, or percentages
    that all happen to be low) is read as percent and said."""
    values = numbers.dropna().astype(float)
    outside = values[~np.isfinite(values) | (values < 0) | (values > 100)]
    if len(outside):
        raise CellError(f"{outside.iloc[0]:g} is not a confidence in percent (0 to 100)", outside.index[0])
    if len(values) and (values <= 1).all() and (values % 1 != 0).any():
        raise ValueError(
            "every confidence is between 0 and 1, with fractions: a 0-1 scale? The platform's "
            "confidences are percentages; multiply the column by 100"
        )
    if notes is not None and len(values) >= _SCALE_SEEN and values.max() <= 10 and (values % 1 == 0).all():
        notes.append(
            f"{table}.csv, column {column!r}: all {len(values)} confidences are whole numbers from "
            f"{values.min():g} to {values.max():g}, read as percent: if they are another scale's "
            "(1-10, 1-7), convert them to percent first, or Brier scores and calibration misread them."
        )


_SCALE_SEEN = 20  # answers on a 0-100 slider, none above 10: hardly by chance


_WHOLE = re.compile(r"^([+-]?\d+)[.,]0+$")


def _codes(text: pd.Series, table: str, column: str, notes: list[str] | None) -> pd.Series:
    """A code column's values as the export writes its codes: in its case ("Completed" is
    "completed", as a spreadsheet's TRUE is true; a side letter "a" is "A") and a whole number
    without its decimals (a winner 1.0, as pandas writes a column it read as numbers, is 1).
    What was read so is said in `notes`, with an example. A value the export never writes in
    the column (`CODES`) is kept, and counted in `notes`: no figure counts its row as any code."""
    known = codes_of(table, column)
    spelling = {code.lower(): code for code in known or ()}

    def one(value):
        if not isinstance(value, str):
            return value
        whole = _WHOLE.match(value)
        if whole:
            return whole.group(1)
        lower = value.lower()
        return spelling.get(lower, value if known else lower)  # a foreign value as written

    codes = text.map(one)
    changed = codes.notna() & (codes != text)
    if notes is None:
        return codes
    if changed.any():
        first = changed.idxmax()
        notes.append(
            f"{table}.csv, column {column!r}: {_count(int(changed.sum()), 'value')} read as the "
            f"export's codes (for example {text[first]!r} as {codes[first]!r})."
        )
    if known:
        foreign = codes.notna() & ~codes.isin(known)
        if foreign.any():
            first = foreign.idxmax()
            notes.append(
                f"{table}.csv, column {column!r}: {_count(int(foreign.sum()), 'row')} with a value "
                f"the export never writes there (for example {text[first]!r}; it writes "
                f"{_either(known)}): no figure counts {'it' if foreign.sum() == 1 else 'them'} "
                "as any of those."
            )
    return codes


def _either(codes: tuple[str, ...]) -> str:
    return ", ".join(codes[:-1]) + " or " + codes[-1] if len(codes) > 1 else codes[0]


def _to_flag(series: pd.Series) -> pd.Series:
    if pd.api.types.is_bool_dtype(series.dtype):
        return series.astype("boolean")

    def one(value):
        if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
            return pd.NA
        if isinstance(value, bool | np.bool_):
            return bool(value)
        if isinstance(value, int | float | np.integer | np.floating) and value in (0, 1):
            return bool(value)
        text = str(value).strip().lower()
        if text == "":
            return pd.NA
        if text in _FLAGS:
            return _FLAGS[text]
        whole = _WHOLE.match(text)  # 1.0 and 0.0, as pandas writes a flag column it read as numbers
        if whole and whole.group(1) in ("0", "1"):
            return whole.group(1) == "1"
        raise ValueError(f"not a flag (1/0/empty): {value!r}")

    values = []
    for at, value in series.astype(object).items():
        try:
            values.append(one(value))
        except ValueError as error:
            raise CellError(str(error), at) from None
    return pd.Series(values, index=series.index, dtype="boolean")


_THOUSANDS_COMMA = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+$")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d+(?:,\d+)?$")
# Digits grouped in threes by spaces, as a spreadsheet in many languages writes them: 1 469,
# 12 345 678.5, with a plain, non-breaking or narrow non-breaking space.
_SPACED = re.compile(r"^[+-]?\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d+)?$")


def _to_id(series: pd.Series) -> pd.Series:
    """An id column: whole numbers (12.0 is 12). Anything else is refused: a fractional id
    turned the whole column into fractions, and every join on it (the participants with
    their answers) then failed without a word."""
    numbers = _to_number(series, "int")
    if numbers.dtype == "Int64":
        return numbers
    bad = numbers.notna() & ((numbers != np.floor(numbers)) | (numbers.abs() >= 2**53))
    raise CellError(f"not a whole number, as ids are: {series[bad].iloc[0]!r}", series[bad].index[0])


def _to_number(series: pd.Series, kind: str) -> pd.Series:
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        numbers = series.astype("float64")
    else:
        s = _blank_to_na(series)
        text = s.astype(object).map(lambda v: v.strip() if isinstance(v, str) else v)
        text = text.map(
            lambda v: re.sub(r"[ \u00a0\u202f]", "", v) if isinstance(v, str) and _SPACED.match(v) else v
        )
        values = text.dropna().astype(str)
        commas = values[values.str.contains(",", regex=False)]
        if kind == "int" and len(commas) and commas.map(lambda v: bool(_THOUSANDS_COMMA.match(v))).all():
            # A whole-number column a spreadsheet wrote with thousands separators (1,001): the
            # export's whole numbers have no decimals to write (read as 1.001, instances merged).
            text = text.map(lambda v: v.replace(",", "") if isinstance(v, str) else v)
        elif (
            values.str.contains(",", regex=False).any()
            and values.map(lambda v: bool(_DECIMAL_COMMA.match(v))).all()
        ):
            # A spreadsheet in a language that writes decimal commas saved it again (with
            # semicolons between the columns, or the comma quoted): 911,4 is 911.4. A point
            # anywhere in the column, or two commas in a value, and it is not read so.
            text = text.map(lambda v: v.replace(",", ".") if isinstance(v, str) else v)
        numbers = pd.to_numeric(text, errors="coerce").astype("float64")
        bad = numbers.isna() & s.notna()
        if bad.any():
            raise CellError(f"not a number: {s[bad].iloc[0]!r}", s[bad].index[0])
    if kind == "int":
        finite = numbers.dropna()
        if (finite == np.floor(finite)).all() and (finite.abs() < 2**53).all():
            return numbers.astype("Int64")
    return numbers
