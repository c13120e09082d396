"""The one adapter to language models.

Two backends, chosen by `settings.LLM_BACKEND`:
- `openai`: the `openai` package's async client against any OpenAI-compatible endpoint
  (`OPENAI_BASE_URL`, `OPENAI_API_KEY`): OpenAI, vLLM, Ollama, llama.cpp server, …;
- `offline`: deterministic text built from the request's `hint` (the claim, the side, the
  sources), for the demo and the tests, like Django's console e-mail backend.

Every failure is an `LLMError` whose `retryable` says whether trying again can help.
Requests are retried here, with exponential backoff that honours `Retry-After`, but a
stream is never retried once text has been handed to the caller: the caller decides what
to do with a half-shown reply. Callers record every call (`debates.call_log`).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import random
import re
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from django.conf import settings

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
OFFLINE = "offline"  # the offline backend's name, in settings and in the call log
MAX_BACKOFF_S = 20.0


class LLMError(Exception):
    """A model call failed. `kind` names why; `retryable` says whether retrying can help."""

    def __init__(
        self, kind: str, message: str, *, retryable: bool, retry_after: float | None = None, partial: str = ""
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.partial = partial  # text already handed to the caller when the stream broke
        self.attempts = 1
        self.waits: list[float] = []  # seconds waited before each retry
        self.ttft_ms: int | None = None
        self.total_ms: int | None = None


@dataclass
class LLMRequest:
    model: str
    messages: list[dict]
    temperature: float = 0.2
    max_tokens: int = 400
    seed: int | None = None
    timeout: float | None = None
    # Used by the offline backend only (never sent anywhere): what the reply is about.
    hint: dict = field(default_factory=dict)

    @property
    def params(self) -> dict:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}

    @property
    def prompt_hash(self) -> str:
        blob = json.dumps([self.model, self.messages, self.params], sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()


@dataclass
class LLMResult:
    text: str
    tokens_in: int | None
    tokens_out: int | None
    ttft_ms: int | None
    total_ms: int
    attempts: int
    backend: str
    model: str
    waits: list[float] = field(default_factory=list)  # seconds waited before each retry


OnText = Callable[[str], Awaitable[None]]


def warm() -> None:
    """Import what the configured backend calls with: the openai SDK and its HTTP library
    take a second or more to import (more on a loaded machine). Called where turns run, as
    the process starts (a Celery worker when ready, the embedded server): imported by the
    first turn instead, they held the loop that streams every turn of the process, and the
    heartbeats with it (tests/debates/live: a live turn taken over by a second writer)."""
    if backend_name() == "openai":
        import aiohttp  # noqa: F401 - the client's transport (_client)
        import openai  # noqa: F401


def backend_name() -> str:
    return settings.LLM_BACKEND


async def stream(request: LLMRequest, on_text: OnText) -> LLMResult:
    """Stream a chat completion, calling `on_text(piece)` as text arrives."""
    backend = _OpenAIBackend() if backend_name() == "openai" else _OfflineBackend()
    return await _with_retries(request, lambda: backend.stream(request, on_text), backend.name)


async def complete(request: LLMRequest) -> LLMResult:
    """A whole (non-streamed) chat completion."""
    backend = _OpenAIBackend() if backend_name() == "openai" else _OfflineBackend()
    return await _with_retries(request, lambda: backend.complete(request), backend.name)


async def _with_retries(request: LLMRequest, attempt: Callable, backend: str) -> LLMResult:
    started = time.monotonic()
    tries = settings.LLM_MAX_RETRIES + 1
    waits: list[float] = []
    for number in range(1, tries + 1):
        try:
            result = await attempt()
        except LLMError as error:
            error.attempts, error.waits = number, waits
            error.total_ms = int((time.monotonic() - started) * 1000)
            if error.partial or not error.retryable or number == tries:
                raise
            waits.append(backoff(number, error.retry_after))
            await asyncio.sleep(waits[-1])
            continue
        result.attempts, result.waits = number, waits
        result.total_ms = int((time.monotonic() - started) * 1000)
        return result
    raise AssertionError("unreachable")


def backoff(number: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(max(retry_after, 0.0), MAX_BACKOFF_S)
    base = settings.LLM_BACKOFF_S * (2 ** (number - 1))
    return min(base * (0.5 + random.random()), MAX_BACKOFF_S)  # noqa: S311 (jitter)


# --- OpenAI-compatible endpoints ---------------------------------------------------------

_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def _client():
    """One AsyncOpenAI client per event loop (its connections belong to the loop).

    Its HTTP goes through aiohttp (`openai.DefaultAioHttpClient`, the SDK's own option for
    many concurrent requests) rather than the default httpx2: httpx2's pool probes the socket
    of every idle connection each time a request is assigned or a response closed, so a
    worker streaming fifty replies paid for fifty probes per request; a streamed request
    cost its worker 4-5 ms of CPU there against 1.4-2 ms on aiohttp (bench/README, "the
    model client"). The client is closed when its loop shuts down (`_closed_with_loop`): a
    loop of `asyncio.run()` or `async_to_sync()` does not outlive its call."""
    from openai import AsyncOpenAI, DefaultAioHttpClient

    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    key = (settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY, settings.LLM_TIMEOUT_S)
    client = per_loop.get(key)
    if client is None:
        client = AsyncOpenAI(
            base_url=settings.OPENAI_BASE_URL or None,
            api_key=settings.OPENAI_API_KEY or "none",
            max_retries=0,  # retries are ours: they must not repeat a stream already shown
            timeout=settings.LLM_TIMEOUT_S,
            http_client=DefaultAioHttpClient(timeout=settings.LLM_TIMEOUT_S),
        )
        per_loop[key] = client
        closer = per_loop[key, "closer"] = _closed_with_loop(client)
        await closer.__anext__()
    return client


async def _closed_with_loop(client):
    """Held at its `yield` for the loop's life: a loop that shuts down (`asyncio.run`,
    `async_to_sync`) closes the async generators still open, and so this client's
    connections, rather than leaving them to the garbage collector's warnings."""
    try:
        yield
    finally:
        await client.close()


def _map_error(error: Exception, partial: str = "") -> LLMError:
    import openai

    if isinstance(error, LLMError):
        return error
    if isinstance(error, openai.APITimeoutError):
        return LLMError("timeout", "the model did not answer in time", retryable=True, partial=partial)
    if isinstance(error, openai.APIConnectionError):
        return LLMError("connection", str(error) or "connection failed", retryable=True, partial=partial)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        retry_after = _retry_after(error.response.headers.get("retry-after"))
        kind = "rate_limited" if status == 429 else f"http_{status}"
        return LLMError(
            kind,
            _short(error.message),
            retryable=status in RETRYABLE_STATUS,
            retry_after=retry_after,
            partial=partial,
        )
    timeouts, transport = _transport_errors()
    if isinstance(error, timeouts):  # raised while reading the stream, not wrapped by openai
        return LLMError("timeout", "the model stopped sending in time", retryable=True, partial=partial)
    if isinstance(error, transport):
        return LLMError(
            "connection", _short(str(error)) or "connection lost", retryable=True, partial=partial
        )
    if isinstance(error, (openai.APIResponseValidationError, json.JSONDecodeError, ValueError, KeyError)):
        return LLMError(
            "malformed", f"unreadable reply: {_short(str(error))}", retryable=True, partial=partial
        )
    return LLMError(
        "error", f"{type(error).__name__}: {_short(str(error))}", retryable=False, partial=partial
    )


def _transport_errors() -> tuple[tuple, tuple]:
    """The HTTP library's timeout and transport errors (openai 3 uses httpx2)."""
    timeouts, transport = [], []
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _OpenAIBackend:
    name = "openai"

    def _kwargs(self, request: LLMRequest) -> dict:
        # The messages go in `extra_body`, which the client merges into the JSON body as
        # given (the same request on the wire): as `messages`, the client first walks every
        # message against its parameters' type hints, which changes nothing in plain dicts of
        # strings and cost 0.5 ms a request, more with a longer conversation (bench/live:
        # 9 % of a worker's CPU in a burst of first turns).
        kwargs = {
            "model": request.model,
            "messages": [],
            "extra_body": {"messages": request.messages},
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.timeout:
            kwargs["timeout"] = request.timeout
        return kwargs

    async def complete(self, request: LLMRequest) -> LLMResult:
        started = time.monotonic()
        try:
            reply = await (await _client()).chat.completions.create(**self._kwargs(request))
            text = reply.choices[0].message.content
        except Exception as error:  # noqa: BLE001 - every failure becomes an LLMError
            raise _map_error(error) from error
        if text is None:
            raise LLMError("malformed", "the reply has no text", retryable=True)
        usage = reply.usage
        elapsed = int((time.monotonic() - started) * 1000)
        return LLMResult(
            text=text,
            tokens_in=usage.prompt_tokens if usage else None,
            tokens_out=usage.completion_tokens if usage else None,
            ttft_ms=elapsed,
            total_ms=elapsed,
            attempts=1,
            backend=self.name,
            model=request.model,
        )

    async def stream(self, request: LLMRequest, on_text: OnText) -> LLMResult:
        """Stream through the openai client's raw event stream: one json.loads per chunk
        instead of a typed object per chunk (bench/live: the typed objects were a fifth of
        a worker's CPU)."""
        started = time.monotonic()
        shown: list[str] = []
        first: float | None = None
        usage: dict = {}
        try:
            stream = (await _client()).chat.completions.with_streaming_response.create(
                **self._kwargs(request), stream=True, stream_options={"include_usage": True}
            )
            async with stream as response:
                async for line in response.iter_lines():
                    piece, event_usage = _parse_event(line)
                    if piece is _DONE:
                        break
                    usage = event_usage or usage
                    if piece:
                        first = first or time.monotonic()
                        shown.append(piece)
                        await on_text(piece)
        except Exception as error:  # noqa: BLE001 - every failure becomes an LLMError
            mapped = _map_error(error, partial="".join(shown))
            mapped.ttft_ms = _ms(started, first)
            raise mapped from error
        if not shown:
            raise LLMError("malformed", "the model sent no text", retryable=True)
        return LLMResult(
            text="".join(shown),
            tokens_in=usage.get("prompt_tokens"),
            tokens_out=usage.get("completion_tokens"),
            ttft_ms=_ms(started, first),
            total_ms=_ms(started, time.monotonic()) or 0,
            attempts=1,
            backend=self.name,
            model=request.model,
        )


_DONE = object()


def _parse_event(line: str) -> tuple[object, dict | None]:
    """One server-sent-events line of a chat completion stream: (text piece, usage)."""
    if not line.startswith("data:"):
        return None, None
    data = line[5:].strip()
    if data == "[DONE]":
        return _DONE, None
    event = json.loads(data)  # a ValueError here is a malformed reply
    if not isinstance(event, dict):
        raise ValueError(f"not an event object: {data[:80]}")
    if "error" in event:
        message = (
            event["error"].get("message", "") if isinstance(event["error"], dict) else str(event["error"])
        )
        raise LLMError("stream_error", f"the model reported an error: {_short(message)}", retryable=True)
    choices = event.get("choices") or []
    delta = (choices[0].get("delta") or {}) if choices else {}
    return delta.get("content"), event.get("usage")


def _ms(start: float, end: float | None) -> int | None:
    return None if end is None else int((end - start) * 1000)


# --- JSON answers ------------------------------------------------------------------------

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_validators: dict[str, object] = {}


def json_answer(text: str, schema: dict) -> tuple[dict | None, str]:
    """The JSON object in a model's answer if it fits `schema`, else (None, what is wrong).
    A code fence or words around the object are tolerated. Every design's and job's JSON
    answers are read here."""
    body = _FENCE.sub("", text.strip())
    if not body.startswith("{") and "{" in body and "}" in body:
        body = body[body.index("{") : body.rindex("}") + 1]
    try:
        data = json.loads(body)
    except ValueError as error:
        why = getattr(error, "msg", error) if "{" in body else "no JSON object in the answer"
        return None, f"not JSON ({why})"
    problem = schema_problem(data, schema)
    return (data, "") if problem is None else (None, problem)


def schema_problem(data: object, schema: dict) -> str | None:
    """None if `data` fits `schema`, else a short description of the first problem (the
    validator of each schema is built once: answers are read on the turns' hot path)."""
    import jsonschema

    key = json.dumps(schema, sort_keys=True)
    validator = _validators.get(key)
    if validator is None:
        validator = _validators[key] = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"does not fit the schema at '{where}': {error.message}"[:300]


# --- Offline -----------------------------------------------------------------------------


class _OfflineBackend:
    """Deterministic, plausible replies without any network: the demo and the unit tests."""

    name = OFFLINE

    async def complete(self, request: LLMRequest) -> LLMResult:
        text = offline_text(request)
        return LLMResult(text, _words(request.messages), len(text.split()), 0, 0, 1, self.name, request.model)

    async def stream(self, request: LLMRequest, on_text: OnText) -> LLMResult:
        started = time.monotonic()
        delay = settings.LLM_OFFLINE_TOKEN_DELAY_MS / 1000
        words = offline_text(request).split(" ")
        for n, word in enumerate(words):
            if delay:
                await asyncio.sleep(delay)
            await on_text(word if n == len(words) - 1 else word + " ")
        total = int((time.monotonic() - started) * 1000)
        return LLMResult(
            " ".join(words),
            _words(request.messages),
            len(words),
            int(delay * 1000),
            total,
            1,
            self.name,
            request.model,
        )


def _words(messages: list[dict]) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)


OPENINGS = [
    "Let me set out why the claim is {stance_word}.",
    "The evidence points one way here: the claim is {stance_word}.",
    "I will show you that this claim is {stance_word}.",
]
ANSWERS = [
    "You asked: \u201c{question}\u201d. Here is my answer.",
    "To your question, \u201c{question}\u201d, the short answer follows.",
]
CLOSINGS = [
    "Weigh the sources, and you will see the claim is {stance_word}.",
    "Taken together, this is why I hold that the claim is {stance_word}.",
]


OfflineHandler = Callable[[LLMRequest], str]
_offline_handlers: dict[str, OfflineHandler] = {}


def register_offline(task: str, fn: OfflineHandler) -> None:
    """Let a design write the offline reply to requests whose `hint["task"]` is `task`
    (called from `AppConfig.ready()`; registering a task again replaces its handler)."""
    _offline_handlers[task] = fn


def offline_text(request: LLMRequest) -> str:
    """A reply assembled from the hint: the side argued, a cited source, the judge's question."""
    hint = request.hint
    handler = _offline_handlers.get(hint.get("task"))
    if handler is not None:
        return handler(request)
    if hint.get("task") == "side_choice":
        return hint.get("preferred", "true")
    seed = int(hashlib.sha256(request.prompt_hash.encode()).hexdigest()[:8], 16)
    pick = random.Random(seed)  # noqa: S311 (not security)
    stance_word = "true" if hint.get("side") == "true" else "false"
    parts = [pick.choice(OPENINGS).format(stance_word=stance_word)]
    if hint.get("question"):
        parts.append(pick.choice(ANSWERS).format(question=hint["question"][:200]))
    sources = hint.get("sources") or []
    if sources:
        number = pick.randrange(len(sources))
        source = sources[number]
        parts.append(f"{source.get('title', 'A source')} [{number + 1}] reports: {source.get('excerpt', '')}")
    if hint.get("opponent_last"):
        parts.append("My opponent's last point does not change this: it leaves the sources I cited standing.")
    parts.append(pick.choice(CLOSINGS).format(stance_word=stance_word))
    return " ".join(parts)
