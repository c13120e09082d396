"""Django's PostgreSQL backend, with each pooled connection checked before a request gets it
and a dead one replaced at once.

Django's own check (CONN_HEALTH_CHECKS with OPTIONS["pool"]) runs inside psycopg_pool's
`getconn`, which after a failed check sleeps with its reconnection back-off — 1 s, then 2 s,
4 s… (psycopg_pool 3.3) — before trying the next idle connection. After a database restart
or killed backends every idle connection of a pool is dead, and Django serves views on one
thread per server process, so every page of that process waited behind the sleeps
(bench/faults: stalls of 3–10 s, the POSTs held in them lost as 502s when the server went
down). Here the pool lends without checking and this backend checks: a dead connection goes
back to the pool, which discards it and opens a replacement, and the next one is tried
without a pause. The settings turn Django's check off (`config/settings.py`).

The check, without a round trip for a connection in use (issue #12): a connection that went
back to the pool less than `RECENT_S` ago is lent if its socket has nothing to read. A
backend that is terminated (`pg_terminate_backend`, a database restart or shutdown) writes
its FATAL message and closes the socket, which makes it readable at once, and an idle
connection otherwise receives nothing (no LISTEN here). A connection idle for longer, never
checked, or with something to read gets the empty query (one round trip), as before: what a
socket cannot show (a firewall that dropped an idle connection silently) is left to it. A
request pays the round trip only after a quiet spell; at 500 arrivals it was 11 of a
participant's 61 round trips.
"""

from __future__ import annotations

import select
import time

import psycopg
from django.db.backends.postgresql import base

RECENT_S = 2.0  # a connection back in the pool for less than this is checked by its socket


def quiet_socket(connection) -> bool:
    """Whether nothing waits to be read on the connection's socket (no FATAL, no EOF)."""
    if connection.closed or connection.broken:
        return False
    try:
        poller = select.poll()  # not select.select: a server with many sockets has descriptors past 1024
        poller.register(connection.pgconn.socket, select.POLLIN | select.POLLPRI)
        return not poller.poll(0)  # readable, hung up, in error or invalid: an event
    except (OSError, ValueError, psycopg.Error):  # a closed descriptor
        return False


def recently_used(connection, now: float) -> bool:
    returned = getattr(connection, "_rostrum_returned_at", None)
    return returned is not None and now - returned < RECENT_S


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        pool = self.pool
        if pool is None:
            return super().get_new_connection(conn_params)
        failure = None
        for _ in range(pool.max_size + 1):  # at worst, every idle connection is dead
            connection = super().get_new_connection(conn_params)
            if recently_used(connection, time.monotonic()) and quiet_socket(connection):
                return connection
            try:
                pool.check_connection(connection)
            except self.Database.Error as error:
                pool.putconn(connection)
                failure = error
                continue
            return connection
        raise failure

    def _close(self):
        if self.pool and self.connection is not None:
            self.connection._rostrum_returned_at = time.monotonic()
        return super()._close()
