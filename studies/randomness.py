"""Seeded randomness: every random draw of a study comes from its seed and a key naming the
draw (what is drawn, and the ordinal of the draw in its pool), so a rerun with the same seed
and the same arrival order draws the same."""

from __future__ import annotations

import hashlib
import random
from fractions import Fraction

from studies.models import Study


def study_rng(study: Study, *key: object) -> random.Random:
    """A generator for one draw of `study`: `key` names the draw, e.g. ("dialogue", 17)."""
    digest = hashlib.sha256(":".join([str(study.seed), *map(str, key)]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))  # noqa: S311 (reproducible design, not security)


def block_value(
    study: Study, key: tuple, ordinal: int, share: float, values: tuple[str, str]
) -> tuple[str, dict]:
    """Block randomisation: the `ordinal`-th (0, 1, 2, …) draw of a sequence named `key`
    takes `values[0]` for `share` of the draws, exactly within each block. The block size
    is the smallest that holds the share exactly (a denominator of at most 20; 0.5 gives
    blocks of 2). Returns the value and a record of the draw."""
    fraction = Fraction(share).limit_denominator(20)
    size = fraction.denominator
    block, place = divmod(ordinal, size)
    firsts = fraction.numerator
    order = [values[0]] * firsts + [values[1]] * (size - firsts)
    study_rng(study, *key, "block", block).shuffle(order)
    return order[place], {"block": block, "place": place, "block_size": size, "share": str(fraction)}
