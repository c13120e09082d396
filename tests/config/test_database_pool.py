"""PostgreSQL's pooled connections (issue 12, bench/faults): a connection that died while idle
in the pool (a database restart, a killed backend, a firewall's idle timeout) is not lent to
the next request, which would fail with it; one just back from a request and quiet is lent
without a round trip (bench/arrivals)."""

import time

import psycopg
import pytest
from django.db import connection

from participants.models import Participant

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def terminate_all() -> int:
    """Every other connection to the test database killed, the pool's idle ones included (as
    bench/faults does), each waited for until its backend has ended; how many."""
    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"], port=settings["PORT"] or None
    ) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            [settings["NAME"]],
        ).fetchall()
    return len(rows)


def test_connections_killed_in_the_pool_are_replaced_before_they_are_lent():
    first = backend_pid()
    connection.close()  # back to the pool, as at the end of every request
    assert terminate_all() >= 1

    for _ in range(3):  # a request after another, each lent a connection the pool holds
        assert Participant.objects.count() == 0
        assert backend_pid() != first
        connection.close()


def test_a_request_meeting_several_dead_connections_in_the_pool_does_not_wait():
    """psycopg_pool's own check sleeps 1 s, then 2 s… after each dead connection it meets;
    with every idle connection killed, a request took the next at once here, not 3 s later."""
    pool = connection.pool
    held = [pool.getconn() for _ in range(3)]  # three connections idle in the pool...
    for each in held:
        pool.putconn(each)
    connection.close()
    assert terminate_all() >= 3  # ... all killed

    started = time.monotonic()
    assert Participant.objects.count() == 0
    assert time.monotonic() - started < 0.9  # the pool's first back-off alone is 0.9-1.1 s
    connection.close()


class CountedChecks:
    """The pool's check (one empty query on the connection), counted."""

    def __init__(self, pool, monkeypatch) -> None:
        self.made = 0
        check = pool.check_connection

        def counted(conn):
            self.made += 1
            return check(conn)

        monkeypatch.setattr(pool, "check_connection", counted)


def test_a_connection_back_from_a_request_a_moment_ago_is_lent_without_a_round_trip(monkeypatch):
    from common.postgresql import base

    backend_pid()
    raw = connection.connection
    connection.close()  # the end of a request: back to the pool, stamped
    assert time.monotonic() - raw._rostrum_returned_at < 1

    pool = connection.pool
    pool.wait(timeout=10)  # replacements of connections killed earlier are in
    idle = []
    while pool.get_stats().get("pool_available", 0):  # every idle one, as if just back from a request
        idle.append(pool.getconn())
    assert idle  # the one just back, at least
    for each in idle:
        each._rostrum_returned_at = time.monotonic()
        pool.putconn(each)

    checks = CountedChecks(pool, monkeypatch)
    for _ in range(5):
        backend_pid()
        connection.close()
    assert checks.made == 0  # each lent on its quiet socket alone

    monkeypatch.setattr(base, "RECENT_S", 0.0)  # every connection back longer ago than that
    backend_pid()
    assert checks.made == 1  # after a quiet spell: checked by a query
    connection.close()


def test_the_socket_check_sees_data_or_a_hang_up_on_any_descriptor():
    """`quiet_socket` on a real socket, at a descriptor past select()'s 1,024 (a server holding
    many websockets): quiet, then readable once the other end writes or closes."""
    import os
    import resource
    import socket
    from types import SimpleNamespace

    from common.postgresql.base import quiet_socket

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1600:
        pytest.skip("cannot open descriptors past 1,024 here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1600), hard))
    ours, theirs = socket.socketpair()
    high = os.dup2(ours.fileno(), 1500)
    try:
        conn = SimpleNamespace(closed=False, broken=False, pgconn=SimpleNamespace(socket=high))
        assert quiet_socket(conn)
        theirs.send(b"E")  # the backend's FATAL message, say
        assert not quiet_socket(conn)
        os.read(high, 1)
        assert quiet_socket(conn)
        theirs.close()  # the backend gone
        assert not quiet_socket(conn)
        assert not quiet_socket(SimpleNamespace(closed=True, broken=False, pgconn=None))
    finally:
        os.close(high)
        ours.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
