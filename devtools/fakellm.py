"""A fake OpenAI-compatible chat completions server, for tests and benchmarks.

A plain ASGI application (no framework) answering the routes the ``openai`` client uses:

- ``POST /v1/chat/completions``, non-streaming and streaming (server-sent events);
- ``GET /v1/models``, ``GET /v1/models/{id}`` and ``GET /healthz``;
- ``GET /_stats`` (counters, and timings recorded on request) and ``POST /_reset``.

The reply is deterministic: words drawn from a fixed vocabulary, seeded by the model's base
name and the last user message, so a prompt always gets the same reply and a longer reply
starts with the shorter one (``reply_text`` computes it, for assertions). One token is one
word plus a trailing space; prompt tokens are the whitespace-separated words of all the
messages' content.

Behaviour is chosen per request by the model name, a base name then ``:key=value`` options,
so one server serves every scenario at once::

    fake                                   40 tokens at once
    fake:ttft=300:tps=30:tokens=120        300 ms to the first token, then 30 tokens/s
    fake:fail=429:times=2:retry_after=1    the first 2 requests get a 429 (Retry-After: 1)
    fake:timeout=30                        30 s of silence before anything is sent
    fake:garbage                           200 with a body (or SSE data) that is not JSON
    fake:cut=20                            streaming: 20 tokens, then the connection drops
    fake:empty                             200 with empty content
    fake:together=200                      no reply until 200 requests of the key are in flight
    fake:hold=1:tokens=5                   streaming: 1 token, then nothing until released

``ttft`` (ms, default 0) is the wait before the first token, or before the whole reply when
not streaming; ``tps`` (default 0: as fast as possible) only paces streams; ``tokens``
(default 40) is the reply length, capped by the request's ``max_tokens`` (finish reason
``length``). ``fail=<status>`` fails the first ``times`` (default 1) requests of a scenario
key: the full model string, plus ``|<scenario>`` when the request names a scenario in an
``X-Scenario`` header or its ``user`` field, so tests can keep their counts apart. ``cut``
is ignored when not streaming. ``together=N`` holds each request of a scenario key until
N of them have arrived (then all go on at once), so a test can know, rather than hope, that
N requests were in flight together; after ``TOGETHER_WAIT_S`` without them a request fails
with a 504. ``hold=N`` (streaming only) stops a stream after its first N tokens (before its
end, if that is all of them) until ``FakeLLM.release(model)`` (or ``POST
/_release?model=…``) lets the streams of that model string go on, those held now and any
later, so a test can know what its client did with the first tokens before any more came (a
stream held for ``TOGETHER_WAIT_S`` goes on by itself; ``held`` counts holds).
Unknown options, a malformed body and a request without ``messages`` get a 400 with an
OpenAI-style error body.

A stream sends its headers at once, then after ``ttft`` the role chunk and the first token
together, then one token per chunk. With the header ``X-Record-Timing: 1`` the server keeps,
per stream, when it sent each token (ms after the request arrived: ``ttft_ms``, ``gaps_ms``)
and lists the last 5,000 under ``timings`` in ``/_stats`` (``/_stats?timings=0`` leaves them out).
``FakeLLM(record_timing=True)`` (command line: ``--record-timing``) records every stream, header
or not. Each record also has the wall-clock times (``time.time()``, seconds) of the request's
arrival and of every token sent (``arrived_at``, ``sent_at``), and ``messages_sha256``
(``messages_digest`` of the request's messages), so a benchmark on the same host can match a
request to what its client saw.

What the ``openai`` client (3.51) raises: a ``fail`` status as ``BadRequestError`` (400),
``AuthenticationError`` (401), ``PermissionDeniedError`` (403), ``NotFoundError`` (404),
``ConflictError`` (409), ``UnprocessableEntityError`` (422), ``RateLimitError`` (429),
``InternalServerError`` (>= 500) or plain ``APIStatusError`` (other statuses), from
``create()`` whether streaming or not; ``timeout`` as ``APITimeoutError``; ``garbage`` as
``json.JSONDecodeError`` (not an ``openai`` error), from ``create()`` or, when streaming,
from the first iteration; ``cut`` as ``APIConnectionError`` while iterating, after the text.

A test can choose the reply's text: ``FakeLLM(responder=fn)`` calls ``fn(body)`` with the parsed
request body (a dict) where the usual reply would be written (so ``ttft``, ``tps``, ``timeout``,
``fail``, ``garbage`` and ``cut`` still apply); a string returned is the reply (streamed in
pieces of one word plus its trailing space, one piece per token), None means the usual
deterministic words. ``fn`` runs on the server's thread.

Run it in the test's process (``run_in_thread``), in a separate one (``run_in_subprocess``),
or from the command line: ``python -m devtools.fakellm --port 8999``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs

import uvicorn

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]
Responder = Callable[[dict[str, Any]], str | None]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = ("fake",)
DEFAULT_TOKENS = 40
TIMING_CAP = 5000
TOGETHER_WAIT_S = 30.0
# What uvicorn logs when the app drops a reply on purpose (cut, or a shutdown mid-reply).
DROPPED_LOG_MESSAGES = frozenset(
    {
        "ASGI callable returned without completing response.",
        "ASGI callable returned without starting response.",
    }
)

VOCABULARY: tuple[str, ...] = (
    "the", "case", "evidence", "suggests", "that", "a", "witness", "saw", "nothing", "unusual",
    "before", "midnight", "however", "door", "was", "locked", "from", "inside", "and", "key",
    "missing", "clearly", "motive", "remains", "unclear", "but", "alibi", "holds", "under",
    "scrutiny", "therefore", "we", "should", "consider", "other", "explanation", "perhaps",
    "gardener", "knew", "more", "than", "he", "admitted", "letter", "points", "to", "an",
    "earlier", "quarrel", "which", "nobody", "mentioned", "yet", "timeline", "is", "consistent",
    "with", "her", "account", "so", "argument", "fails", "in", "end",
)  # fmt: skip
# One streamed delta per vocabulary word, JSON-encoded once: '{"content":"word "}'.
_CONTENT_DELTAS: tuple[bytes, ...] = tuple(
    json.dumps({"content": word + " "}, separators=(",", ":")).encode() for word in VOCABULARY
)
_ROLE_DELTA = b'{"role":"assistant","content":"","refusal":null}'
_DONE = b"data: [DONE]\n\n"
_DELTA_MARK = "\x00delta\x00"
_PATHS = frozenset({"/healthz", "/v1/models", "/v1/chat/completions", "/_stats", "/_reset", "/_release"})

_FLAGS = frozenset({"garbage", "empty"})
_NUMBERS: Mapping[str, type] = {
    "ttft": float,
    "tps": float,
    "tokens": int,
    "fail": int,
    "times": int,
    "retry_after": float,
    "timeout": float,
    "cut": int,
    "together": int,
    "hold": int,
}
# status: (type, code, message) of OpenAI's own error bodies.
_ERRORS: Mapping[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access."),
    409: ("invalid_request_error", None, "Conflict."),
    422: ("invalid_request_error", None, "Unprocessable entity."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
    504: ("server_error", None, "Gateway timeout."),
}


class BadRequest(Exception):
    """A request the API would refuse, answered with an OpenAI-style error body."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None, status: int = 400):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status


# --- Scenarios and replies -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Scenario:
    """What the model name asks of the server; times in seconds."""

    base: str
    ttft: float = 0.0
    tps: float = 0.0
    tokens: int = DEFAULT_TOKENS
    fail: int | None = None
    times: int = 1
    retry_after: float | None = None
    timeout: float = 0.0
    garbage: bool = False
    cut: int | None = None
    empty: bool = False
    together: int = 0
    hold: int | None = None


def parse_model(model: str) -> Scenario:
    """``fake:ttft=300:tps=30`` → Scenario(base="fake", ttft=0.3, tps=30.0); BadRequest if invalid."""
    base, *parts = model.split(":")
    if not base:
        raise BadRequest(f"Invalid model {model!r}: the base name is empty.", param="model")
    options: dict[str, Any] = {}
    for part in parts:
        name, value = _parse_option(model, part)
        if name in options:
            raise BadRequest(f"Invalid model {model!r}: option {name!r} given twice.", param="model")
        options[name] = value
    if "ttft" in options:
        options["ttft"] /= 1000
    if options.get("fail") is not None and not 400 <= options["fail"] <= 599:
        raise BadRequest(f"Invalid model {model!r}: fail must be an HTTP status 400-599.", param="model")
    return Scenario(base=base, **options)


def _parse_option(model: str, part: str) -> tuple[str, Any]:
    name, has_value, raw = part.partition("=")
    if name in _FLAGS and not has_value:
        return name, True
    kind = _NUMBERS.get(name)
    if kind is None or not has_value:
        raise BadRequest(
            f"Invalid model {model!r}: unknown option {part!r}.", param="model", code="unknown_option"
        )
    try:
        value = kind(raw)
    except ValueError:
        value = -1
    if not (math.isfinite(value) and value >= 0):
        raise BadRequest(f"Invalid model {model!r}: {name} must be a finite number >= 0.", param="model")
    return name, value


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = (p for p in content if isinstance(p, dict) and p.get("type") == "text")
        return " ".join(p.get("text") or "" for p in parts)
    return ""


def prompt_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    return sum(len(content_text(m.get("content")).split()) for m in messages)


def last_user_text(messages: Iterable[Mapping[str, Any]]) -> str:
    texts = [content_text(m.get("content")) for m in messages if m.get("role") == "user"]
    return texts[-1] if texts else ""


def messages_digest(messages: Any) -> str:
    """SHA-256 of the messages as canonical JSON (sorted keys, no spaces, UTF-8): how a
    caller that kept the messages it sent finds this server's record of the request."""
    blob = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def reply_words(base: str, last_user: str, count: int) -> list[int]:
    """Vocabulary indices of the reply; a longer reply starts with the shorter one."""
    digest = hashlib.blake2b(f"{base}\x00{last_user}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big")).choices(range(len(VOCABULARY)), k=count)


def words_text(indices: Iterable[int]) -> str:
    return "".join(VOCABULARY[i] + " " for i in indices)


def text_pieces(text: str) -> list[str]:
    """A chosen reply cut into tokens: each word with the spaces after it (leading spaces alone)."""
    return re.findall(r"^\s+|\S+\s*", text)


def reply_text(model: str, messages: Iterable[Mapping[str, Any]], max_tokens: int | None = None) -> str:
    """The text the server answers to these messages with this model string (for assertions)."""
    scenario = parse_model(model)
    messages = list(messages)
    count = 0 if scenario.empty else scenario.tokens
    if max_tokens is not None:
        count = min(count, max_tokens)
    return words_text(reply_words(scenario.base, last_user_text(messages), count))


def scenario_key(model: str, scenario: str | None = None) -> str:
    """The key requests are counted under (and ``fail`` counts against)."""
    return f"{model}|{scenario}" if scenario else model


@dataclasses.dataclass(slots=True)
class ChatRequest:
    """A validated chat completion request."""

    model: str
    scenario: Scenario
    key: str
    messages: list[dict[str, Any]]
    stream: bool
    include_usage: bool
    max_tokens: int | None
    record_timing: bool
    body: dict[str, Any] = dataclasses.field(default_factory=dict)  # the parsed request body

    @property
    def words(self) -> list[int]:
        count = 0 if self.scenario.empty else self.scenario.tokens
        if self.max_tokens is not None:
            count = min(count, self.max_tokens)
        return reply_words(self.scenario.base, last_user_text(self.messages), count)

    @property
    def finish_reason(self) -> str:
        truncated = self.max_tokens is not None and self.max_tokens < self.scenario.tokens
        return "length" if truncated and not self.scenario.empty else "stop"


def request_key(payload: Any, headers: Mapping[str, str]) -> str | None:
    """The scenario key of a request body, or None when it has no model string."""
    if not isinstance(payload, dict) or not isinstance(payload.get("model"), str):
        return None
    user = payload.get("user")
    scenario = headers.get("x-scenario") or (user if isinstance(user, str) else None)
    return scenario_key(payload["model"], scenario)


def parse_chat(payload: Any, key: str | None, headers: Mapping[str, str]) -> ChatRequest:
    if not isinstance(payload, dict):
        raise BadRequest("The request body must be a JSON object.")
    if key is None:
        raise BadRequest("You must provide a model parameter.", param="model")
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty array of messages.", param="messages")
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise BadRequest("Each message must be an object with a 'role'.", param="messages")
    stream_options = payload.get("stream_options") or {}
    return ChatRequest(
        model=payload["model"],
        scenario=parse_model(payload["model"]),
        key=key,
        messages=messages,
        stream=payload.get("stream") is True,
        include_usage=isinstance(stream_options, dict) and stream_options.get("include_usage") is True,
        max_tokens=_max_tokens(payload),
        record_timing=headers.get("x-record-timing") == "1",
        body=payload,
    )


def _max_tokens(payload: Mapping[str, Any]) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):
        value = payload.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise BadRequest(f"Invalid '{name}': must be an integer >= 1.", param=name)
        return value
    return None


def error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def injected_error(status: int, nth: int, times: int) -> dict[str, Any]:
    type_, code, message = _ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "Injected failure.")
    )
    return error_body(f"{message} (fakellm: injected failure {nth} of {times})", type_, code)


# --- Counters --------------------------------------------------------------------------------


class Stats:
    """Request counters and recorded timings; safe to read from another thread."""

    TOTALS = (
        "requests",
        "ok",
        "streamed",
        "failed",
        "bad_request",
        "garbage",
        "cut",
        "held",
        "disconnected",
        "dropped",
        "prompt_tokens",
        "completion_tokens",
        "in_flight",
        "max_in_flight",
    )

    def __init__(self, timing_cap: int = TIMING_CAP) -> None:
        self._lock = threading.Lock()
        self._timing_cap = timing_cap
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._requests: collections.Counter[str] = collections.Counter()
            self._totals = dict.fromkeys(self.TOTALS, 0)
            self._timings: collections.deque[dict[str, Any]] = collections.deque(maxlen=self._timing_cap)

    def arrived(self, key: str | None) -> int:
        """Count a chat request; returns how many this key has had, this one included."""
        with self._lock:
            totals = self._totals
            totals["requests"] += 1
            totals["in_flight"] += 1
            totals["max_in_flight"] = max(totals["max_in_flight"], totals["in_flight"])
            if key is None:
                return 0
            self._requests[key] += 1
            return self._requests[key]

    def left(self) -> None:
        with self._lock:
            self._totals["in_flight"] -= 1

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._totals[name] += amount

    def timing(self, key: str, arrived: float, sent: list[float], messages: Any = None) -> None:
        """Record one stream: ``arrived`` and ``sent`` are ``time.perf_counter()`` readings."""
        if not sent:
            return
        ms = [round((t - arrived) * 1000, 3) for t in sent]
        gaps = [round(b - a, 3) for a, b in zip(ms, ms[1:])]
        wall = time.time() - time.perf_counter()  # perf_counter -> time.time() (same host clock)
        record = {
            "scenario": key,
            "ttft_ms": ms[0],
            "gaps_ms": gaps,
            "arrived_at": round(arrived + wall, 6),
            "sent_at": [round(t + wall, 6) for t in sent],
            "messages_sha256": messages_digest(messages) if messages is not None else None,
        }
        with self._lock:
            self._timings.append(record)

    def snapshot(self, timings: bool = True) -> dict[str, Any]:
        with self._lock:
            snap: dict[str, Any] = {"requests": dict(self._requests), "totals": dict(self._totals)}
            if timings:
                snap["timings"] = list(self._timings)
        return snap


# --- HTTP plumbing ---------------------------------------------------------------------------


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None if the client went away first."""
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


def json_headers(body: bytes, extra: Iterable[tuple[bytes, bytes]] = ()) -> Headers:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]


class Exchange:
    """One HTTP response, plus a watch on the client: if it hangs up while a reply is being
    prepared or streamed, the handling task is cancelled, so no sleep outlives its client."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._owner = asyncio.current_task()
        self._watcher: asyncio.Task[None] | None = None
        self.gone = False

    def watch(self) -> None:
        self._watcher = asyncio.create_task(self._watch())

    def unwatch(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        if self._watcher is None:  # unwatched meanwhile: the response is complete
            return
        self.gone = True
        if self._owner is not None:
            self._owner.cancel()

    async def start(self, status: int, headers: Headers) -> None:
        await self._send({"type": "http.response.start", "status": status, "headers": headers})

    async def part(self, body: bytes) -> None:
        await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def end(self, body: bytes = b"") -> None:
        self.unwatch()  # completing the response wakes the watcher with a disconnect
        await self._send({"type": "http.response.body", "body": body})

    async def json(self, status: int, payload: Any, extra: Iterable[tuple[bytes, bytes]] = ()) -> None:
        body = json.dumps(payload).encode()
        await self.start(status, json_headers(body, extra))
        await self.end(body)


def uncancel() -> None:
    """Forget a cancellation of this task (nothing above the ASGI app awaits its outcome)."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


async def pause_until(due: float) -> None:
    """Sleep until ``due`` (perf_counter time); yields to other streams even when it is past."""
    await asyncio.sleep(max(0.0, due - time.perf_counter()))


class Frames:
    """The bytes of one reply's SSE events, with everything but the delta encoded once."""

    def __init__(self, request: ChatRequest, completion_id: str, created: int) -> None:
        self.request = request
        self.common: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": request.model,
            "system_fingerprint": "fp_fakellm",
        }
        if request.include_usage:
            self.common["usage"] = None
        choice = {"index": 0, "delta": _DELTA_MARK, "logprobs": None, "finish_reason": None}
        text = json.dumps({**self.common, "choices": [choice]}, separators=(",", ":"))
        head, tail = text.split(json.dumps(_DELTA_MARK), 1)
        self.head = b"data: " + head.encode()
        self.tail = tail.encode() + b"\n\n"
        self.finish_reason = request.finish_reason

    def delta(self, delta: bytes) -> bytes:
        return self.head + delta + self.tail

    def token(self, index: int) -> bytes:
        return self.head + _CONTENT_DELTAS[index] + self.tail

    def text(self, piece: str) -> bytes:
        return self.delta(json.dumps({"content": piece}, separators=(",", ":")).encode())

    def role(self) -> bytes:
        return self.delta(_ROLE_DELTA)

    def event(self, payload: Mapping[str, Any]) -> bytes:
        return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    def ending(self, usage: Mapping[str, int]) -> bytes:
        choice = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": self.finish_reason}
        events = [self.event({**self.common, "choices": [choice]})]
        if self.request.include_usage:
            events.append(self.event({**self.common, "choices": [], "usage": usage}))
        return b"".join(events) + _DONE


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


# --- The application -------------------------------------------------------------------------


class FakeLLM:
    """The ASGI application; each instance has its own counters."""

    def __init__(
        self,
        models: Iterable[str] = DEFAULT_MODELS,
        timing_cap: int = TIMING_CAP,
        record_timing: bool = False,
        responder: Responder | None = None,
    ) -> None:
        self.models = tuple(models)
        self.responder = responder  # the reply's text chosen by a test (None: the usual words)
        self.stats = Stats(timing_cap)
        self.record_timing = record_timing  # every stream, not only those asking by header
        self._gatherings: dict[str, tuple[int, asyncio.Event]] = {}
        self._released: set[str] = set()  # model strings whose held streams go on (hold=N)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        arrived = time.perf_counter()
        body = await read_body(receive)
        if body is None:
            return
        exchange = Exchange(receive, send)
        method, path = scope["method"], scope["path"].rstrip("/") or "/"
        if path == "/v1/chat/completions" and method == "POST":
            await self.chat(exchange, body, scope, arrived)
        else:
            await self.route(exchange, method, path, scope.get("query_string", b""))

    async def route(self, exchange: Exchange, method: str, path: str, query: bytes) -> None:
        found = self.resource(method, path, query)
        if found is not None:
            await exchange.json(*found)
        elif path in _PATHS or path.startswith("/v1/models/"):
            await exchange.json(405, error_body(f"Method {method} not allowed.", "invalid_request_error"))
        else:
            await exchange.json(404, error_body(f"No route {path}.", "invalid_request_error", "not_found"))

    def resource(self, method: str, path: str, query: bytes) -> tuple[int, Any] | None:
        """(status, payload) of the small JSON routes, or None when nothing matches."""
        if method == "GET" and path == "/healthz":
            return 200, {"status": "ok"}
        if method == "GET" and path == "/v1/models":
            return 200, {"object": "list", "data": [model_card(m) for m in self.models]}
        if method == "GET" and path.startswith("/v1/models/"):
            return self.model(path.removeprefix("/v1/models/"))
        if method == "GET" and path == "/_stats":
            return 200, self.stats.snapshot(timings=parse_qs(query.decode()).get("timings") != ["0"])
        if method == "POST" and path == "/_release":
            model = parse_qs(query.decode()).get("model", [""])[0]
            self.release(model)
            return 200, {"status": "released", "model": model}
        if method == "POST" and path == "/_reset":
            self.stats.reset()
            return 200, {"status": "reset"}
        return None

    def model(self, name: str) -> tuple[int, Any]:
        if name in self.models:
            return 200, model_card(name)
        message = f"The model '{name}' does not exist or you do not have access to it."
        return 404, error_body(message, "invalid_request_error", "model_not_found")

    async def chat(self, exchange: Exchange, body: bytes, scope: Scope, arrived: float) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        key = request_key(payload, headers)
        nth = self.stats.arrived(key)
        exchange.watch()
        try:
            request = parse_chat(payload, key, headers)
            await self.answer(exchange, request, nth, arrived)
        except BadRequest as exc:
            self.stats.add("bad_request")
            body = error_body(exc.message, "invalid_request_error", exc.code, exc.param)
            await exchange.json(exc.status, body)
        except asyncio.CancelledError:
            # The client hung up, or the server is shutting down with this reply unfinished:
            # either way the reply is dropped and uvicorn closes the connection.
            uncancel()
            self.stats.add("disconnected" if exchange.gone else "dropped")
        finally:
            exchange.unwatch()
            self.stats.left()

    async def answer(self, exchange: Exchange, request: ChatRequest, nth: int, arrived: float) -> None:
        scenario = request.scenario
        if scenario.together and not await self.gather(request.key, scenario.together):
            self.stats.add("failed")
            message = f"Only some of the {scenario.together} requests arrived together."
            await exchange.json(504, error_body(message, "server_error", None))
            return
        await pause_until(arrived + scenario.timeout)
        if scenario.fail is not None and nth <= scenario.times:
            await self.fail(exchange, scenario, nth)
        elif scenario.garbage:
            await self.garbage(exchange, request, arrived)
        elif request.stream:
            await self.stream(exchange, request, arrived)
        else:
            await self.complete(exchange, request, arrived)

    async def gather(self, key: str, count: int) -> bool:
        """Wait until `count` requests of this key are waiting here, then release them all."""
        waiting, event = self._gatherings.get(key, (0, asyncio.Event()))
        waiting += 1
        if waiting >= count:
            self._gatherings.pop(key, None)
            event.set()
        else:
            self._gatherings[key] = (waiting, event)
        try:
            await asyncio.wait_for(event.wait(), TOGETHER_WAIT_S)
        except TimeoutError:
            still, same = self._gatherings.get(key, (0, None))
            if same is event:  # leave the count as if this request had never come
                self._gatherings[key] = (still - 1, event)
            return False
        return True

    async def fail(self, exchange: Exchange, scenario: Scenario, nth: int) -> None:
        self.stats.add("failed")
        status = scenario.fail or 500
        extra = [request_id()]
        if scenario.retry_after is not None:
            extra.append((b"retry-after", format_seconds(scenario.retry_after).encode()))
        await exchange.json(status, injected_error(status, nth, scenario.times), extra)

    async def garbage(self, exchange: Exchange, request: ChatRequest, arrived: float) -> None:
        self.stats.add("garbage")
        await pause_until(arrived + request.scenario.timeout + request.scenario.ttft)
        broken = b'{"id": "chatcmpl-garbage", "object": "chat.completion", "choices": [{"message": <html>oops'
        if not request.stream:
            await exchange.start(200, json_headers(broken, [request_id()]))
            await exchange.end(broken)
            return
        await exchange.start(200, sse_headers())
        await exchange.part(b"data: " + broken + b"\n\n")
        await exchange.end(b"data: <<not json>>\n\n" + _DONE)

    async def complete(self, exchange: Exchange, request: ChatRequest, arrived: float) -> None:
        await pause_until(arrived + request.scenario.timeout + request.scenario.ttft)
        chosen = self.chosen_text(request)
        if chosen is None:
            words = request.words
            content, count, finish_reason = words_text(words), len(words), request.finish_reason
        else:
            content, count, finish_reason = chosen, len(text_pieces(chosen)), "stop"
        counts = usage(prompt_tokens(request.messages), count)
        payload = {
            "id": completion_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "system_fingerprint": "fp_fakellm",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": counts,
        }
        self.count_reply(counts)
        await exchange.json(200, payload, [request_id()])

    async def stream(self, exchange: Exchange, request: ChatRequest, arrived: float) -> None:
        scenario = request.scenario
        frames = Frames(request, completion_id(), int(time.time()))
        chosen = self.chosen_text(request)
        words: list[Any] = request.words if chosen is None else text_pieces(chosen)
        if chosen is not None:
            frames.finish_reason = "stop"
        cut = scenario.cut is not None
        if cut:
            words = words[: scenario.cut]
        await exchange.start(200, sse_headers())
        first_due = arrived + scenario.timeout + scenario.ttft
        if scenario.hold is not None and scenario.hold <= len(words):
            first = []
            if scenario.hold:
                first = await self.send_tokens(
                    exchange, frames, words[: scenario.hold], first_due, scenario.tps
                )
            await self.held(request.model)
            rest = await self.send_tokens(
                exchange, frames, words[scenario.hold :], first_due, scenario.tps, role=not scenario.hold
            )
            sent = first + rest
        else:
            sent = await self.send_tokens(exchange, frames, words, first_due, scenario.tps)
        self.stats.add("streamed")
        if request.record_timing or self.record_timing:
            self.stats.timing(request.key, arrived, sent, request.messages)
        if cut:
            self.stats.add("cut")
            self.stats.add("completion_tokens", len(words))
            return  # without completing the response: uvicorn drops the connection
        counts = usage(prompt_tokens(request.messages), len(words))
        self.count_reply(counts)
        await exchange.end(frames.ending(counts))

    @staticmethod
    async def send_tokens(
        exchange: Exchange, frames: Frames, words: list[Any], first_due: float, tps: float, role: bool = True
    ) -> list[float]:
        """Send the role chunk (unless `role` is False: already sent) and the tokens, paced;
        returns the send time of each token."""
        await pause_until(first_due)
        interval = 1 / tps if tps > 0 else 0.0
        sent: list[float] = []
        if not words and role:
            sent.append(time.perf_counter())
            await exchange.part(frames.role())
        for i, index in enumerate(words):
            if i:
                await pause_until(sent[0] + i * interval)
            chunk = frames.token(index) if isinstance(index, int) else frames.text(index)
            sent.append(time.perf_counter())
            await exchange.part(frames.role() + chunk if i == 0 and role else chunk)
        return sent

    def release(self, model: str) -> None:
        """Let the streams of this model string held by ``hold=N`` go on, now and later (from
        any thread)."""
        self._released.add(model)

    async def held(self, model: str) -> None:
        """Wait until ``release(model)``, or ``TOGETHER_WAIT_S``."""
        self.stats.add("held")
        deadline = time.monotonic() + TOGETHER_WAIT_S
        while model not in self._released and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    def chosen_text(self, request: ChatRequest) -> str | None:
        """The responder's text for this request, or None for the usual words."""
        return None if self.responder is None else self.responder(request.body)

    def count_reply(self, counts: Mapping[str, int]) -> None:
        self.stats.add("ok")
        self.stats.add("prompt_tokens", counts["prompt_tokens"])
        self.stats.add("completion_tokens", counts["completion_tokens"])


def model_card(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "fakellm"}


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def request_id() -> tuple[bytes, bytes]:
    return (b"x-request-id", f"req_{uuid.uuid4().hex[:24]}".encode())


def sse_headers() -> Headers:
    return [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        request_id(),
    ]


def format_seconds(seconds: float) -> str:
    return str(int(seconds)) if seconds == int(seconds) else repr(seconds)


async def lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


app = FakeLLM()


# --- Running it ------------------------------------------------------------------------------


class _QuietDrops(logging.Filter):
    """Drops uvicorn's complaints about replies the app drops on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() not in DROPPED_LOG_MESSAGES


def quiet_dropped_logs() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrops) for f in logger.filters):
        logger.addFilter(_QuietDrops())


def uvicorn_config(application: FakeLLM, host: str = "127.0.0.1", port: int = 0) -> uvicorn.Config:
    config = uvicorn.Config(
        application,
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=1,  # then replies still in flight are dropped
    )
    quiet_dropped_logs()
    return config


class ThreadedServer:
    """An ASGI app served by uvicorn in a background thread on loopback; a context manager.
    `name` names the thread and the error; `started()` runs once the port is known."""

    name = "server"

    def __init__(self, application: Any, port: int = 0, host: str = "127.0.0.1") -> None:
        self.app = application
        self.host = host
        self.port = port
        self._server = uvicorn.Server(uvicorn_config(self.app, host, port))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> Self:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._server.run, name=self.name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the {self.name} did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        self.started()
        return self

    def started(self) -> None:
        """Called once the server listens (self.port is the real port)."""

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class FakeLLMServer(ThreadedServer):
    """uvicorn serving a FakeLLM in a background thread with its own event loop.

    Started on creation by ``run_in_thread``; ``start()`` is idempotent; use it as a context
    manager or call ``stop()``."""

    name = "fake LLM server"

    def __init__(self, application: FakeLLM | None = None, port: int = 0, host: str = "127.0.0.1") -> None:
        super().__init__(application or FakeLLM(), port, host)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def stats(self, timings: bool = True) -> dict[str, Any]:
        return self.app.stats.snapshot(timings=timings)

    def reset(self) -> None:
        self.app.stats.reset()


def run_in_thread(port: int = 0, application: FakeLLM | None = None) -> FakeLLMServer:
    """A started server (a fresh FakeLLM unless one is given); ``with run_in_thread() as s:``."""
    return FakeLLMServer(application, port).start()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the fake LLM server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 (loopback)
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the fake LLM server did not answer {url} within {timeout}s")


@contextlib.contextmanager
def run_in_subprocess(
    port: int = 0, models: Iterable[str] = (), timeout: float = 20.0, record_timing: bool = False
) -> Iterator[str]:
    """``python -m devtools.fakellm --port P`` as a separate process; yields its base URL (…/v1)."""
    port = port or free_port()
    command = [sys.executable, "-m", "devtools.fakellm", "--port", str(port)]
    for model in models:
        command += ["--model", model]
    if record_timing:
        command.append("--record-timing")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", process, timeout)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process(process)


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible chat completions server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8999)
    parser.add_argument("--model", action="append", help="a model name for /v1/models (repeatable)")
    parser.add_argument(
        "--record-timing",
        action="store_true",
        help="record every stream's timings (not only those sent with X-Record-Timing: 1)",
    )
    parser.add_argument("--timing-cap", type=int, default=TIMING_CAP, help="timing records kept (the last N)")
    args = parser.parse_args(argv)
    application = FakeLLM(
        args.model or DEFAULT_MODELS, timing_cap=args.timing_cap, record_timing=args.record_timing
    )
    uvicorn.Server(uvicorn_config(application, args.host, args.port)).run()


if __name__ == "__main__":
    main()
