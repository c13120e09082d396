"""Websocket limits on the production path: two uvicorn processes sharing PostgreSQL and
Redis, a real websocket client. One token's sockets are counted across both processes
(class-level state would allow four on each), and frames PostgreSQL cannot store or
json.loads cannot parse are answered, not a dropped socket."""

from __future__ import annotations

import json
import time

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect as ws_connect

from debates.sockets import LEASE_S, SocketLimits
from tests.support import persuasion as ps
from tests.support.servers import asgi_server

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

ENV = {"LLM_BACKEND": "offline", "DJANGO_ALLOW_ASYNC_UNSAFE": ""}


@pytest.fixture
def token(settings):
    """A participant seated in a persuasion dialogue whose turn it is (nothing runs on connect)."""
    ps.use_offline(settings)
    w = ps.arrive(ps.dialogue_study(side="pro"))
    w.page()
    return ps.person(w).token


def opened(base: str, token: str):
    url = base.replace("http://", "ws://") + f"/ws/persuasion/{token}/"
    s = ws_connect(url, origin="http://127.0.0.1", open_timeout=10).__enter__()
    assert json.loads(s.recv(timeout=10))["type"] == "snapshot"
    return s


def opened_once_room(base: str, token: str, within: float = 3.0):
    """`opened`, tried again while refused: the other process forgets a closed socket in its
    disconnect handler, which may run just after the client's close returns."""
    deadline = time.monotonic() + within
    while True:
        try:
            return opened(base, token)
        except InvalidStatus:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.25)  # within the attempts a minute allowed


def answer(s, text: str) -> dict:
    s.send(text)
    return json.loads(s.recv(timeout=10))


def test_a_token_s_sockets_are_counted_across_server_processes(token):
    cap = SocketLimits().sockets_per_token
    with asgi_server(**ENV) as first, asgi_server(**ENV) as second:
        # Open sockets are counted minute by minute, each renewing its count within a quarter
        # of a minute: the test runs within one minute, where the count is exact.
        left = LEASE_S - time.time() % LEASE_S
        if left < 15:
            time.sleep(left + 0.1)
        held = [opened(first, token) for _ in range(cap // 2)] + [
            opened(second, token) for _ in range(cap - cap // 2)
        ]
        with pytest.raises(InvalidStatus) as refused:
            opened(first, token)
        assert refused.value.response.status_code == 403  # the handshake, refused with 4429
        held.pop().close()
        # A socket closed on one process makes room on the other.
        held.append(opened_once_room(first, token))
        for s in held:
            s.close()


def test_nul_characters_and_deep_json_get_errors_on_postgresql_and_the_socket_stays_open(token):
    with asgi_server(**ENV) as base:
        s = opened(base, token)
        nul = answer(s, json.dumps({"type": "say", "text": "I hold \u0000 this."}))
        deep = answer(s, "[" * 100_000 + "]" * 100_000)
        s.send(json.dumps({"type": "resync"}))
        alive = json.loads(s.recv(timeout=10))["type"] == "snapshot"
        s.close()
    assert nul == {"type": "error", "message": "Messages cannot contain a NUL character."}
    assert deep["type"] == "error" and deep["message"].startswith("Message too long")
    assert alive


def test_a_frame_over_the_servers_limit_closes_the_socket_before_it_is_read_whole(token):
    """uvicorn's default frame limit (16 MiB) let a participant's sockets make the server hold
    and decode frames a thousand times longer than any message; the servers start with
    --ws-max-size 262144 (config.protocol.UVICORN_OPTIONS, scripts/demo.sh, the Dockerfile)."""
    with asgi_server(**ENV) as base:
        s = opened(base, token)
        under = answer(s, json.dumps({"type": "say", "text": "x" * 200_000}))  # the app's own refusal
        s.send(json.dumps({"type": "say", "text": "x" * 300_000}))
        with pytest.raises(ConnectionClosed) as closed:
            s.recv(timeout=10)
    assert under["type"] == "error" and under["message"].startswith("Message too long")
    assert closed.value.rcvd.code == 1009  # message too big
