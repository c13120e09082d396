"""What an export table is (columns with their codebook text, and a row generator), and
the small helpers the tables share to read rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class Table:
    """An export table: `columns` start with the study's slug and snapshot hash; `rows(study)`
    are the rows of the table's own columns, and `rows_for(study)` adds those two."""

    name: str
    description: str
    columns: list[Column]
    rows: Callable[[Study], Iterator[dict]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", [STUDY, STUDY_SHA256, *self.columns])

    def rows_for(self, study: Study) -> Iterator[dict]:
        for row in self.rows(study):
            row["study"], row["study_sha256"] = study.slug, study.snapshot_sha256
            yield row


def flag(value) -> str:
    return "" if value is None else ("1" if value else "0")


def iso(value) -> str:
    return value.isoformat() if value else ""


def seconds_between(start, end):
    return round((end - start).total_seconds(), 1) if start and end else ""


def active_exclusions(study: Study) -> dict[int, list[str]]:
    """Active exclusion reasons per participant id."""
    reasons: dict[int, list[str]] = {}
    rows = Exclusion.objects.filter(
        participant__study=study, participant__is_preview=False, revoked_at__isnull=True
    ).values_list("participant_id", "reason")
    for participant_id, reason in rows.iterator(chunk_size=CHUNK):
        reasons.setdefault(participant_id, []).append(reason)
    return reasons
