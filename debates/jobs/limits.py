"""Per-endpoint limits on job calls: at most C calls in flight and R calls per window for a
model, across every job, worker and server process (the state lives in the cache: Redis in
production, the process's memory in the embedded default, where one process runs all).

`JOB_MODEL_LIMITS` names them ("gpt-4o=8/500,*=4/60"). A call waits (asynchronously) for
a free place: rate places by fixed windows of `JOB_RATE_WINDOW_S`, concurrency places as
`slots` keys taken with an atomic add and given back after the call; a slot whose holder
died expires after the longest a call can take, so a killed worker never leaks one for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import lru_cache

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured

POLL_S = 0.05


async def _cached(method, *args):
    """A cache call in a worker thread. Not the cache's async API: BaseCache.aincr is a get
    then a set (two tasks can both read 0 and both write 1), while the sync incr is atomic
    (Redis INCR; LocMemCache under its lock)."""
    return await sync_to_async(method, thread_sensitive=False)(*args)


@dataclass(frozen=True)
class Limit:
    concurrency: int  # calls in flight at most (0: no limit)
    per_window: int  # calls per JOB_RATE_WINDOW_S (0: no limit)


@lru_cache(maxsize=8)
def parse(text: str) -> dict[str, Limit]:
    """'model=C/R, …' as {model: Limit}; raises ImproperlyConfigured on a malformed pair."""
    limits = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        model, _, numbers = part.rpartition("=")
        concurrency, _, per_window = numbers.partition("/")
        try:
            limits[model.strip()] = Limit(int(concurrency), int(per_window or 0))
        except ValueError:
            raise ImproperlyConfigured(f"JOB_MODEL_LIMITS: {part!r} is not model=C/R") from None
        if not model.strip() or min(limits[model.strip()].concurrency, limits[model.strip()].per_window) < 0:
            raise ImproperlyConfigured(f"JOB_MODEL_LIMITS: {part!r} is not model=C/R")
    return limits


def limit_for(model: str) -> Limit | None:
    limits = parse(settings.JOB_MODEL_LIMITS or "")
    return limits.get(model) or limits.get("*")


@contextlib.asynccontextmanager
async def endpoint_place(model: str) -> AsyncIterator[None]:
    """Hold a place for one call to `model` while the block runs."""
    limit = limit_for(model)
    if limit is None:
        yield
        return
    if limit.per_window:
        await _rate_place(model, limit.per_window)
    if not limit.concurrency:
        yield
        return
    key, token = await _slot(model, limit.concurrency)
    try:
        yield
    finally:
        if await _cached(cache.get, key) == token:
            await _cached(cache.delete, key)


async def _rate_place(model: str, per_window: int) -> None:
    window_s = settings.JOB_RATE_WINDOW_S
    while True:
        now = time.time()
        window = int(now // window_s)
        key = f"jobs:rate:{model}:{window}"
        await _cached(cache.add, key, 0, window_s * 2)
        try:
            taken = await _cached(cache.incr, key)
        except ValueError:  # expired between add and incr: try again
            continue
        if taken <= per_window:
            return
        await asyncio.sleep((window + 1) * window_s - now + 0.01)


def _slot_ttl() -> int:
    return int(settings.LLM_TIMEOUT_S * (settings.LLM_MAX_RETRIES + 1) + 60)


async def _slot(model: str, concurrency: int) -> tuple[str, str]:
    token = secrets.token_hex(8)
    while True:
        for number in range(concurrency):
            key = f"jobs:slot:{model}:{number}"
            if await _cached(cache.add, key, token, _slot_ttl()):
                return key, token
        await asyncio.sleep(POLL_S)
