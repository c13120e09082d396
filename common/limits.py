"""Limits per client: who the client is, and how often it may do something.

- `client_address()`: the socket peer, or, when the peer is one of `TRUSTED_PROXIES`, the
  address its X-Forwarded-For names (the rightmost one that is not itself a trusted proxy).
  By default nothing is trusted. IPv6 addresses count per /64 network, one subscriber's
  block. (uvicorn already puts X-Forwarded-For in the peer's place for connections from
  127.0.0.1 and ::1, its `--proxy-headers` default; `TRUSTED_PROXIES` is for the others.)
- `rate_hit()`: one more event in fixed windows ("20/60": 20 per 60 seconds), counted where
  every server process sees the count: Redis in production (one round trip for all the
  windows), Django's cache (memory) in the embedded default, one process.
- `rate_wait()`: whether a key is past its limit, without counting (wrong API tokens are
  counted only when they fail, and refused unchecked once past the limit).
- `count_add()`: a shared counter (the websockets a token holds open).

Counters failing (Redis down) never refuse anyone: limits fail open, with a warning logged.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Iterable
from functools import lru_cache

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured

from common.rates import Window, parse_windows

log = logging.getLogger(__name__)
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


# --- The client's address ------------------------------------------------------------------


@lru_cache(maxsize=8)
def _trusted(spec: tuple[str, ...]) -> tuple[Network, ...]:
    try:
        return tuple(ipaddress.ip_network(item, strict=False) for item in spec)
    except ValueError as error:
        raise ImproperlyConfigured(f"TRUSTED_PROXIES: {error}") from None


def trusted_proxies() -> tuple[Network, ...]:
    return _trusted(tuple(settings.TRUSTED_PROXIES))


def _parse(value: str) -> Address | None:
    try:
        address = ipaddress.ip_address(value.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_trusted(address: Address, proxies: tuple[Network, ...]) -> bool:
    return any(address.version == net.version and address in net for net in proxies)


# The one client every peer address that cannot be read counts as (an address, as axes stores one).
UNREADABLE = "0.0.0.0"  # noqa: S104 (a key for the counters, never bound to)


def client_address(peer: str, forwarded: str = "") -> str:
    """The client's address as a limit's key ("" when there is no peer at all, a Unix socket:
    no limit applies). `peer`: the socket peer (REMOTE_ADDR); `forwarded`: the X-Forwarded-For
    header. A peer that is not an address ("unknown": uvicorn's --proxy-headers puts what a
    trusted proxy forwarded in the peer's place, unread) counts as one client, UNREADABLE, for
    all such: it was no limit at all, so a forged header lifted every per-address limit."""
    if not peer:
        return ""
    address = _parse(peer)
    if address is None:
        _warn_unreadable(peer)
        return UNREADABLE
    proxies = trusted_proxies()
    if forwarded and _is_trusted(address, proxies):
        for hop in reversed(forwarded.split(",")):
            named = _parse(hop)
            if named is None:
                break  # a garbled hop: the last address we could trust stands
            address = named
            if not _is_trusted(address, proxies):
                break
    elif forwarded and (address.is_private or address.is_loopback):
        _warn_untrusted_proxy(str(address))
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((int(address) >> 64 << 64, 64)))
    return str(address)


def request_address(request) -> str:
    return client_address(request.META.get("REMOTE_ADDR", ""), request.META.get("HTTP_X_FORWARDED_FOR", ""))


_warned: set[str] = set()


def _warn_unreadable(peer: str) -> None:
    if "unreadable" not in _warned:
        _warned.add("unreadable")
        log.warning(
            "A client address that is not an address (%r) counts as %s, one client for every such "
            "request: check what the proxy in front forwards",
            peer[:60],
            UNREADABLE,
        )


def _warn_untrusted_proxy(peer: str) -> None:
    """Once per peer and process: a local proxy in front whose header is ignored makes every
    visitor one client for the limits (set TRUSTED_PROXIES)."""
    if peer not in _warned:
        _warned.add(peer)
        log.warning(
            "X-Forwarded-For from %s is ignored: if it is your proxy, add it to TRUSTED_PROXIES, "
            "otherwise every visitor counts as one client for the rate limits",
            peer,
        )


# --- Counting -------------------------------------------------------------------------------


@lru_cache(maxsize=32)
def windows(spec: tuple[str, ...]) -> tuple[Window, ...]:
    """The windows of a limit setting (common.rates); the settings check them at start-up."""
    try:
        return parse_windows(spec)
    except ValueError as error:
        raise ImproperlyConfigured(f"a rate limit must be {error}") from None


def rate_hit(scope: str, key: str, spec: Iterable[str], now: float | None = None) -> int:
    """Count one event of `scope` by `key` in every window of `spec`. Returns 0 when every
    window is within its count, else the seconds until the fullest one ends (a Retry-After).
    Refused events count too, so a client that keeps trying stays refused."""
    found, now = windows(tuple(spec)) if key else (), time.time() if now is None else now
    if not found:
        return 0
    counts = _counters().add_many([(_window_name(scope, key, w, now), w.seconds + 1) for w in found], 1)
    return max((_wait(w, now) for w, n in zip(found, counts) if n > w.count), default=0)


def rate_wait(scope: str, key: str, spec: Iterable[str], now: float | None = None) -> int:
    """What `rate_hit` would say of the events counted so far, without counting one: 0 while
    every window of `spec` is within its count, else the seconds until the fullest one ends."""
    found, now = windows(tuple(spec)) if key else (), time.time() if now is None else now
    full = [w for w in found if _counters().get(_window_name(scope, key, w, now)) >= w.count]
    return max((_wait(w, now) for w in full), default=0)


def _window_name(scope: str, key: str, window: Window, now: float) -> str:
    return f"rate:{scope}:{key}:{window.seconds}:{int(now // window.seconds)}"


def _wait(window: Window, now: float) -> int:
    """Seconds until the window holding `now` ends (at least 1)."""
    return max(1, int((int(now // window.seconds) + 1) * window.seconds - now) + 1)


def count_add(name: str, delta: int, ttl: int) -> int:
    """Add `delta` to the shared counter `name` (which lives `ttl` seconds from its first
    count) and return its new value."""
    return _counters().add_many([(name, ttl)], delta)[0]


def count_get(name: str) -> int:
    return _counters().get(name)


def count_forget(names: list[str]) -> None:
    _counters().forget(names)


class _CacheCounters:
    """The embedded default: Django's cache (memory, one process)."""

    def add_many(self, names: list[tuple[str, int]], delta: int) -> list[int]:
        return [self._add(name, ttl, delta) for name, ttl in names]

    @staticmethod
    def _add(name: str, ttl: int, delta: int) -> int:
        if delta > 0 and cache.add(name, delta, ttl):
            return delta
        try:
            return cache.incr(name, delta)
        except ValueError:  # gone meanwhile (expired), or counting down a counter that expired
            if delta > 0:
                cache.add(name, delta, ttl)
            return max(delta, 0)

    def get(self, name: str) -> int:
        return int(cache.get(name) or 0)

    def forget(self, names: list[str]) -> None:
        cache.delete_many(names)


class _RedisCounters:
    """Production: Redis, shared by every server process; one round trip per call (a
    counter is created with its lifetime, then counted, in one pipeline)."""

    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=None)

    def add_many(self, names: list[tuple[str, int]], delta: int) -> list[int]:
        pipe = self.client.pipeline(transaction=False)
        for name, ttl in names:
            pipe.set(f"rostrum:{name}", 0, ex=ttl, nx=True)
            pipe.incrby(f"rostrum:{name}", delta)
        return pipe.execute()[1::2]

    def get(self, name: str) -> int:
        return int(self.client.get(f"rostrum:{name}") or 0)

    def forget(self, names: list[str]) -> None:
        self.client.delete(*(f"rostrum:{name}" for name in names))


class _FailOpen:
    """The counters, but a store that fails counts nothing (limits never refuse then)."""

    def __init__(self, store) -> None:
        self.store = store

    def add_many(self, names: list[tuple[str, int]], delta: int) -> list[int]:
        try:
            return self.store.add_many(names, delta)
        except Exception:  # noqa: BLE001 - Redis down or unreachable
            log.warning("rate-limit counters unavailable: not limiting", exc_info=True)
            return [0] * len(names)

    def get(self, name: str) -> int:
        try:
            return self.store.get(name)
        except Exception:  # noqa: BLE001 - see add_many
            return 0

    def forget(self, names: list[str]) -> None:
        self.store.forget(names)


_stores: dict[str, _FailOpen] = {}


def _counters() -> _FailOpen:
    url = settings.REDIS_URL
    if url not in _stores:
        _stores[url] = _FailOpen(_RedisCounters(url) if url else _CacheCounters())
    return _stores[url]
