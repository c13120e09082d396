"""Admission control for HTTP under ASGI.

Django serves synchronous views under ASGI by running each request in a thread of its own.
When hundreds of participants arrive at once, hundreds of threads then fight over the GIL
and over a handful of pooled database connections: CPU per request roughly doubles and,
past the pool's timeout, requests fail. Letting only a few requests into Django at a time
per process (about as many as there are pooled connections) keeps the rest waiting
cheaply in the event loop, in arrival order, instead.

A place is taken only once the request's body has been read in full (config.limits, in front
of this): a client that stalls its body must not hold one of these few places.
"""

from __future__ import annotations

import asyncio


class HTTPConcurrencyLimit:
    def __init__(self, app, limit: int) -> None:
        self.app = app
        self.limit = limit
        self._semaphore: asyncio.Semaphore | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or self.limit <= 0:
            await self.app(scope, receive, send)
            return
        if self._semaphore is None:  # created lazily, inside the worker's event loop
            self._semaphore = asyncio.Semaphore(self.limit)
        async with self._semaphore:
            await self.app(scope, receive, send)
