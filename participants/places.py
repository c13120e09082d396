"""Places: what a participant holds in a study's quotas (a dialogue, a claim cell, comparison
instances), how places are counted, how the least-filled one is handed out, and whether a
participant back after their time limit keeps theirs.

A place counts while its participant has completed and is not excluded, or is in progress
with an unexpired lease; previews never count. Every study design hands out places the same
way: it locks the rows that serialise assignment for the pool (`select_for_update`; on
SQLite the IMMEDIATE transaction already holds the write lock), counts the places held with
`places_held()`, and takes the least-filled candidates with `least_filled()`. Each design
also describes its places as a `PlaceKind`, registered in its app's `ready()`, so that the
flow engine can tell whether a returning participant may keep what they were given.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING, TypeVar

from django.db.models import Count, Q, QuerySet

from participants.models import Participant

if TYPE_CHECKING:
    from studies.models import Study

T = TypeVar("T", bound=Hashable)


def holds_place_q(now: datetime, prefix: str = "") -> Q:
    """Participants whose place counts toward a quota: completed and not excluded, or in
    progress with an unexpired lease. Previews never count."""
    p = prefix
    return Q(**{f"{p}is_preview": False}) & (
        Q(**{f"{p}status": Participant.Status.COMPLETED, f"{p}excluded": False})
        | Q(**{f"{p}status": Participant.Status.ACTIVE, f"{p}expires_at__gt": now})
    )


def lease_minutes(study: Study) -> int:
    """How long a participant's place is held: the study's time limit."""
    return study.effective_time_limit_minutes


def places_held(
    rows: QuerySet,
    by: str | tuple[str, ...],
    now: datetime,
    *,
    exclude: Participant | None = None,
    prefix: str = "participant__",
) -> Counter:
    """Places held among `rows` (each row is one place of its participant, reached through
    `prefix`), counted per value of the field `by` (a tuple of fields: per tuple of values)."""
    fields = (by,) if isinstance(by, str) else by
    held = rows.filter(holds_place_q(now, prefix))
    if exclude is not None:
        held = held.exclude(**{prefix.removesuffix("__"): exclude})
    counts = held.order_by().values(*fields).annotate(n=Count("id"))
    if isinstance(by, str):
        return Counter({row[by]: row["n"] for row in counts})
    return Counter({tuple(row[f] for f in fields): row["n"] for row in counts})


def least_filled(
    candidates: Sequence[T],
    held: Mapping[T, int],
    target: int,
    *,
    k: int = 1,
    preview: bool = False,
    rng: random.Random | None = None,
) -> list[T]:
    """Up to `k` candidates that still have room, the least-filled first, ties broken at
    random. Empty when every candidate is full, except for a preview, which may take a full
    place since it never counts."""
    open_ = [c for c in candidates if held.get(c, 0) < target]
    if preview and not open_:
        open_ = list(candidates)
    (rng or random).shuffle(open_)
    return sorted(open_, key=lambda c: held.get(c, 0))[:k]


@dataclass(frozen=True)
class PlaceKind:
    """A kind of place a study design hands out.

    - `rows(participant)`: the rows holding places of this kind in the participant's pool
      (one row per place, with a `participant` foreign key);
    - `key`: the fields naming a place among those rows;
    - `target(participant, key)`: how many holders the place may have;
    - `lock(participant)`: lock what serialises assignment of those places.
    """

    name: str
    rows: Callable[[Participant], QuerySet]
    key: tuple[str, ...]
    target: Callable[[Participant, tuple], int]
    lock: Callable[[Participant], None]

    def kept(self, participant: Participant, now: datetime) -> bool:
        """May a participant whose lease ran out keep their places of this kind? Only if
        none of them has been filled by others meanwhile (call inside a transaction)."""
        rows = self.rows(participant)
        mine = set(rows.filter(participant=participant).values_list(*self.key))
        if not mine:
            return True
        self.lock(participant)
        same = reduce(or_, (Q(**dict(zip(self.key, values))) for values in mine))
        held = places_held(rows.filter(same), self.key, now, exclude=participant)
        return all(held[values] < self.target(participant, values) for values in mine)


_kinds: dict[str, PlaceKind] = {}


def register(kind: PlaceKind) -> None:
    """Called from a design app's `ready()`."""
    if kind.name in _kinds:
        raise ValueError(f"place kind {kind.name!r} is registered twice")
    _kinds[kind.name] = kind


def places_kept(participant: Participant, now: datetime) -> bool:
    """Whether a participant back after their time limit keeps every place they hold."""
    return all(kind.kept(participant, now) for kind in _kinds.values())
