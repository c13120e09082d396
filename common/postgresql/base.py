"""Django's PostgreSQL backend, with each pooled connection checked before a request gets it
and a dead one replaced at once.

Django's own check (CONN_HEALTH_CHECKS with OPTIONS["pool"]) runs inside psycopg_pool's
`getconn`, which after a failed check sleeps with its reconnection back-off — 1 s, then 2 s,
4 s… (psycopg_pool 3.3) — before trying the next idle connection. After a database restart
or killed backends every idle connection of a pool is dead, and Django serves views on one
thread per server process, so every page of that process waited behind the sleeps
(bench/faults: stalls of 3–10 s, the POSTs held in them lost as 502s when the server went
down). Here the pool lends without checking and this backend checks (one empty query): a
dead connection goes back to the pool, which discards it and opens a replacement, and the
next one is tried without a pause. The settings turn Django's check off (`config/settings.py`).
"""

from __future__ import annotations

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        pool = self.pool
        if pool is None:
            return super().get_new_connection(conn_params)
        failure = None
        for _ in range(pool.max_size + 1):  # at worst, every idle connection is dead
            connection = super().get_new_connection(conn_params)
            try:
                pool.check_connection(connection)
            except self.Database.Error as error:
                pool.putconn(connection)
                failure = error
                continue
            return connection
        raise failure
