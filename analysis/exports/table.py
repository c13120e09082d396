"""What an export table is (columns with their codebook text, and a row generator), and
the small helpers the tables share to read rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import islice
from typing import Any

from django.db.models import Q

from participants.models import Exclusion
from studies.models import Study

CHUNK = 2000


@dataclass(frozen=True)
class Column:
    name: str
    description: str
    get: Callable[[dict], Any]


def col(name: str, description: str, key: str | None = None) -> Column:
    key = key or name
    return Column(name, description, lambda row: row.get(key))


STUDY = col("study", "The study's slug, so that the tables of several studies can be concatenated.")
STUDY_SHA256 = col(
    "study_sha256",
    "SHA-256 of the study's snapshot frozen when it went live (settings, steps, items, content and "
    "model settings; `manage.py verify_study` recomputes it). Empty for a study never live.",
)


ALL = slice(None)


@dataclass(frozen=True)
class Table:
    """An export table: `columns` start with the study's slug and snapshot hash; `rows(study)`
    are the rows of the table's own columns, and `rows_for(study)` adds those two.

    A `windowed` table makes one row per object of one ordered queryset, and its
    `rows(study, window)` slices that queryset: a window of rows (the API's page) is then read
    with LIMIT and OFFSET, instead of building every row before it."""

    name: str
    description: str
    columns: list[Column]
    rows: Callable[..., Iterator[dict]]
    windowed: bool = False
    # The step kinds of the study design whose rows the table holds; empty: every design's.
    kinds: frozenset[str] = frozenset()

    def holds_rows_of(self, step_kinds: set[str]) -> bool:
        """Whether a study with these step kinds can have rows in this table."""
        return not self.kinds or bool(self.kinds & step_kinds)

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", [STUDY, STUDY_SHA256, *self.columns])

    def rows_for(self, study: Study, window: slice = ALL) -> Iterator[dict]:
        """The rows, or those of `window` (a slice with no step): the same rows either way."""
        if window == ALL:
            rows = self.rows(study)
        elif self.windowed:
            rows = self.rows(study, window)
        else:
            rows = islice(self.rows(study), window.start, window.stop)
        for row in rows:
            row["study"], row["study_sha256"] = study.slug, study.snapshot_sha256
            yield row


# --- Whose data: the one selection of participants the tables, the overview and reports read

_PILOTS: ContextVar[frozenset[int] | bool] = ContextVar("rostrum_analysed_pilots", default=False)


def analysed(prefix: str = "participant__") -> Q:
    """The participants whose data the analysis reads, reached through `prefix` ("" for the
    Participant rows themselves): never previews; the real participants, or inside
    `pilot_data()` the pilots only (`manage.py pilot`)."""
    pilots = _PILOTS.get()
    q = Q(**{f"{prefix}is_preview": False, f"{prefix}is_pilot": pilots is not False})
    if isinstance(pilots, frozenset):
        q &= Q(**{f"{prefix}id__in": pilots})
    return q


def pilots_analysed() -> frozenset[int] | bool:
    """Inside `pilot_data()`: True, or the ids of the pilots it names; else False."""
    return _PILOTS.get()


@contextmanager
def pilot_data(only: Iterable[int] | None = None) -> Iterator[None]:
    """Inside the block (in this thread), the export tables read pilot participants only (those
    of `only`, the ids of one pilot run, when given): a pilot's report. Everywhere else pilots
    are left out."""
    token = _PILOTS.set(True if only is None else frozenset(only))
    try:
        yield
    finally:
        _PILOTS.reset(token)


def flag(value) -> str:
    return "" if value is None else ("1" if value else "0")


def iso(value) -> str:
    return value.isoformat() if value else ""


def seconds_between(start, end):
    return round((end - start).total_seconds(), 1) if start and end else ""


def active_exclusions(study: Study) -> dict[int, list[str]]:
    """Active exclusion reasons per participant id."""
    reasons: dict[int, list[str]] = {}
    active = Exclusion.objects.filter(analysed(), participant__study=study, revoked_at__isnull=True)
    rows = active.values_list("participant_id", "reason")
    for participant_id, reason in rows.iterator(chunk_size=CHUNK):
        reasons.setdefault(participant_id, []).append(reason)
    return reasons
