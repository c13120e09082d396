"""Admission control for HTTP under ASGI.

Django serves synchronous views under ASGI by running each request in a thread of its own.
When hundreds of participants arrive at once, hundreds of threads then fight over the GIL
and over a handful of pooled database connections: CPU per request roughly doubles and,
past the pool's timeout, requests fail. Letting only a few requests into Django at a time
per process (about as many as there are pooled connections) keeps the rest waiting
cheaply in the event loop, in arrival order, instead.

A place is taken only once the request's body has been read in full (config.limits, in front
of this): a client that stalls its body must not hold one of these few places.

Password checks have a lane of their own. A login attempt hashes the password it is given
(PBKDF2, about a quarter of a second of CPU here, for unknown usernames too), and on the one
thread that serves every page of the process that held participants' pages back: a client
posting logins at a few a second stalled them by seconds. Requests to `password_paths` by
POST wait for places of their own (`password_limit` per process) and are marked to run on a
thread of their own (`OWN_THREAD`, read by config.asgi); the hash releases the GIL meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from common.security import app_path

OWN_THREAD = "rostrum.own_thread"  # scope key: serve this request off the shared thread


class HTTPConcurrencyLimit:
    def __init__(
        self, app, limit: int, *, password_paths: Iterable[str] = (), password_limit: int = 1
    ) -> None:
        self.app = app
        self.limit = limit
        self.password_paths = frozenset(password_paths)
        self.password_limit = max(1, password_limit)
        self._semaphore: asyncio.Semaphore | None = None
        self._password_semaphore: asyncio.Semaphore | None = None

    async def __call__(self, scope, receive, send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"].upper() == "POST"
            and app_path(scope) in self.password_paths
        ):
            if self._password_semaphore is None:
                self._password_semaphore = asyncio.Semaphore(self.password_limit)
            async with self._password_semaphore:
                await self.app({**scope, OWN_THREAD: True}, receive, send)
            return
        if scope["type"] != "http" or self.limit <= 0:
            await self.app(scope, receive, send)
            return
        if self._semaphore is None:  # created lazily, inside the worker's event loop
            self._semaphore = asyncio.Semaphore(self.limit)
        async with self._semaphore:
            await self.app(scope, receive, send)
