"""CPU time of process trees read from /proc (Linux), for the benchmark's CPU figures."""

from __future__ import annotations

import os
from dataclasses import dataclass

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Stat:
    pid: int
    ppid: int
    comm: str
    own: float  # utime + stime, seconds
    children: float  # cutime + cstime (children already waited for), seconds


def read_stat(pid: int) -> Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm is in parentheses and may contain spaces or parentheses: split at the last ')'.
    head, _, rest = raw.rpartition(")")
    comm = head.split("(", 1)[1]
    fields = rest.split()
    # fields[0] is state (field 3); utime..cstime are fields 14..17.
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return Stat(int(pid), int(fields[1]), comm, (utime + stime) / TICK, (cutime + cstime) / TICK)


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks after boot): with the pid, it names one process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().decode(errors="replace").rpartition(")")[2].split()[19])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def all_stats() -> list[Stat]:
    stats = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                stats.append(stat)
    return stats


def tree_cpu(root: int) -> float:
    """CPU seconds of `root` and all its live descendants, plus what their reaped children used."""
    stats = all_stats()
    by_parent: dict[int, list[Stat]] = {}
    for s in stats:
        by_parent.setdefault(s.ppid, []).append(s)
    root_stat = next((s for s in stats if s.pid == root), None)
    if root_stat is None:
        return 0.0
    total, todo = 0.0, [root_stat]
    while todo:
        s = todo.pop()
        total += s.own + s.children
        todo.extend(by_parent.get(s.pid, []))
    return total


def tree_pids(root: int) -> list[int]:
    stats = all_stats()
    by_parent: dict[int, list[int]] = {}
    for s in stats:
        by_parent.setdefault(s.ppid, []).append(s.pid)
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(by_parent.get(pid, []))
    return pids


def postgres_cpu() -> float:
    """CPU seconds of every `postgres` process (postmaster, backends, background workers),
    plus the postmaster's cumulative children's time, which holds the backends that exited.
    Differences of two readings give the database's CPU over an interval."""
    stats = [s for s in all_stats() if s.comm == "postgres"]
    pids = {s.pid for s in stats}
    total = 0.0
    for s in stats:
        total += s.own
        if s.ppid not in pids:  # the postmaster: its reaped children are the exited backends
            total += s.children
    return total
