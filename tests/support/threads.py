"""Many threads at once, each with its own database connection, released by a barrier so
that they really race (concurrency tests)."""

from __future__ import annotations

import threading
import traceback
from contextlib import contextmanager

from django.db import connection


@contextmanager
def pool_size(size: int):
    """Let more threads than the default pool size hold a connection at once, and let a
    thread wait for a connection as long as it takes: on a busy machine the others hold
    theirs longer, and a wait is not what these tests are about (the default 20 s timeout
    failed a run while a benchmark loaded the machine)."""
    pool = connection.settings_dict["OPTIONS"].get("pool")
    if not pool:
        yield
        return
    old = dict(pool)
    connection.close_pool()
    pool.update(max_size=size, timeout=600)
    try:
        yield
    finally:
        connection.close_pool()
        pool.clear()
        pool.update(old)


@contextmanager
def patient_sqlite():
    """On SQLite, let a thread wait for the write lock as long as it takes (the default busy
    timeout is 30 s): 200 IMMEDIATE transactions queue for one lock, and on a loaded machine
    the last waited longer than that ("database is locked"); a wait is not what these tests
    are about, over-filling is."""
    options = connection.settings_dict["OPTIONS"]
    old = options.get("timeout")
    options["timeout"] = 600
    try:
        yield
    finally:
        options["timeout"] = old


def run_threads(target, count: int) -> list[str]:
    """Start `count` threads that wait at a barrier, then all call target(n) at once."""
    barrier = threading.Barrier(count)
    errors: list[str] = []

    def body(n: int) -> None:
        try:
            barrier.wait(timeout=60)
            target(n)
        except Exception:
            errors.append(traceback.format_exc())
        finally:
            connection.close()

    threads = [threading.Thread(target=body, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)
    assert not any(t.is_alive() for t in threads), "threads hung"
    return errors
