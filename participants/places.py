"""Places: what a participant holds in a study's quotas (a dialogue, a claim cell, comparison
instances), how places are counted, how the least-filled one is handed out, and whether a
participant back after their time limit keeps theirs.

A place counts while its participant has completed and is not excluded, or is in progress
with an unexpired lease; previews and pilots never count. Every study design hands out places the same
way: it locks the rows that serialise assignment for the pool (`select_for_update`; on
SQLite the IMMEDIATE transaction already holds the write lock), counts the places held with
`places_held()`, and takes the least-filled candidates with `least_filled()`. Each design
also describes its places as a `PlaceKind`, registered in its app's `ready()`, so that the
flow engine can tell whether a returning participant may keep what they were given.

A place taken by serving a page is held for PLACE_IDLE_MINUTES only until the participant's
next answer (`participants.services.place_taken`): a place taken and not worked on is
released soon, whatever the study's time limit.
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


def holds_place_q(now: datetime, prefix: str = "", *, excluded_hold: bool = False) -> Q:
    """Participants whose place counts toward a quota: completed (and not excluded, unless
    `excluded_hold`: a study whose exclusions do not free places), or in progress with an
    unexpired lease. Previews and pilots never count."""
    p = prefix
    completed = Q(**{f"{p}status": Participant.Status.COMPLETED})
    if not excluded_hold:
        completed &= Q(**{f"{p}excluded": False})
    return Q(**{f"{p}is_preview": False, f"{p}is_pilot": False}) & (
        completed | Q(**{f"{p}status": Participant.Status.ACTIVE, f"{p}expires_at__gt": now})
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
    excluded_hold: bool = False,
) -> Counter:
    """Places held among `rows` (each row is one place of its participant, reached through
    `prefix`), counted per value of the field `by` (a tuple of fields: per tuple of values).
    See `holds_place_q` for `excluded_hold`."""
    fields = (by,) if isinstance(by, str) else by
    held = rows.filter(holds_place_q(now, prefix, excluded_hold=excluded_hold))
    if exclude is not None:
        held = held.exclude(**{prefix.removesuffix("__"): exclude})
    counts = held.order_by().values(*fields).annotate(n=Count("id"))
    if isinstance(by, str):
        return Counter({row[by]: row["n"] for row in counts})
    return Counter({tuple(row[f] for f in fields): row["n"] for row in counts})


def least_filled(
    candidates: Sequence[T],
    held: Mapping[T, int],
    target: int | Callable[[T], int | None],
    *,
    k: int = 1,
    preview: bool = False,
    rng: random.Random | None = None,
) -> list[T]:
    """Up to `k` candidates that still have room, the least-filled first (by the share of
    their target held; by places held for one without a target), ties broken at random.
    `target` is one number for all, or a function of the candidate (None: no limit). Empty
    when every candidate is full, except for a preview, which may take a full place since
    it never counts."""
    limit = target if callable(target) else (lambda c: target)

    def fullness(c: T) -> float:
        cap = limit(c)
        return held.get(c, 0) / cap if cap else held.get(c, 0)

    open_ = [c for c in candidates if limit(c) is None or held.get(c, 0) < limit(c)]
    if preview and not open_:
        open_ = list(candidates)
    (rng or random).shuffle(open_)
    return sorted(open_, key=fullness)[:k]


@dataclass(frozen=True)
class PlaceKind:
    """A kind of place a study design hands out.

    - `rows(participant)`: the rows holding places of this kind in the participant's pool
      (one row per place, with a `participant` foreign key);
    - `key`: the fields naming a place among those rows;
    - `target(participant, key)`: how many holders the place may have (None: no limit);
    - `lock(participant)`: lock what serialises assignment of those places;
    - `room(participant, now)`, optional: the whole decision for a design whose places have
      limits beyond one target per place (e.g. per condition), after the lock;
    - `settable_exclusions`: whether the study's "exclusions free places" setting applies
      (a design whose quota is of valid answers ignores it).
    """

    name: str
    rows: Callable[[Participant], QuerySet]
    key: tuple[str, ...]
    target: Callable[[Participant, tuple], int | None]
    lock: Callable[[Participant], None]
    room: Callable[[Participant, datetime], bool] | None = None
    settable_exclusions: bool = True

    def kept(self, participant: Participant, now: datetime) -> bool:
        """May a participant whose lease ran out keep their places of this kind? Only if
        none of them has been filled by others meanwhile (call inside a transaction)."""
        rows = self.rows(participant)
        mine = set(rows.filter(participant=participant).values_list(*self.key))
        if not mine:
            return True
        self.lock(participant)
        if self.room is not None:
            return self.room(participant, now)
        same = reduce(or_, (Q(**dict(zip(self.key, values))) for values in mine))
        hold = self.settable_exclusions and not participant.study.exclusion_frees_place
        held = places_held(rows.filter(same), self.key, now, exclude=participant, excluded_hold=hold)
        targets = {values: self.target(participant, values) for values in mine}
        return all(targets[v] is None or held[v] < targets[v] for v in mine)


_kinds: dict[str, PlaceKind] = {}


def register(kind: PlaceKind) -> None:
    """Called from a design app's `ready()`."""
    if kind.name in _kinds:
        raise ValueError(f"place kind {kind.name!r} is registered twice")
    _kinds[kind.name] = kind


def places_kept(participant: Participant, now: datetime) -> bool:
    """Whether a participant back after their time limit keeps every place they hold."""
    return all(kind.kept(participant, now) for kind in _kinds.values())


def place_held(participant: Participant) -> bool:
    """Whether the participant holds a place of any kind (one query per kind, at most)."""
    return any(kind.rows(participant).filter(participant=participant).exists() for kind in _kinds.values())


def may_take_place(step_kind) -> bool:
    """Whether serving a page of this step kind may hand out a place: every study design's
    kinds may; the flow engine's own (participants.steps: consent, instructions,
    questionnaires, attention checks, screening, debrief) never do."""
    return not type(step_kind).__module__.startswith("participants.")
