"""Rate-limit windows, written COUNT/SECONDS ("20/60": 20 per 60 seconds), or "off" for none.
Plain Python: the settings check them at start-up, common.limits counts with them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

OFF = ("off", "0", "")


@dataclass(frozen=True)
class Window:
    count: int
    seconds: int


def parse_windows(spec: Iterable[str]) -> tuple[Window, ...]:
    """("20/60", "120/3600") → 20 per minute and 120 per hour; "off" (or nothing): none.
    A malformed item raises ValueError saying what was expected and what was given."""
    parsed = []
    for raw in spec:
        item = raw.strip()
        if item.lower() in OFF:
            continue
        count, slash, seconds = item.partition("/")
        if not (slash and count.isdigit() and seconds.isdigit() and int(count) >= 1 and int(seconds) >= 1):
            raise ValueError(f"COUNT/SECONDS windows like 20/60,120/3600 (or off), got {item!r}")
        parsed.append(Window(int(count), int(seconds)))
    return tuple(parsed)
