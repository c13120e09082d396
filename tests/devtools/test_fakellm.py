"""The fake LLM server, driven by the real ``openai`` client (sync and async), so the tests
that rely on it know it behaves like an OpenAI-compatible endpoint, failures included."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator

import httpx
import openai
import pytest

from devtools.fakellm import (
    FakeLLM,
    FakeLLMServer,
    Scenario,
    parse_model,
    reply_text,
    run_in_subprocess,
    run_in_thread,
    scenario_key,
)

PROMPT = [
    {"role": "system", "content": "You are a careful judge."},
    {"role": "user", "content": "Who took the key from the study?"},
]
PROMPT_WORDS = 5 + 7


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with run_in_thread() as running:
        yield running


@pytest.fixture
def scenario() -> str:
    return uuid.uuid4().hex[:12]


@pytest.fixture
def client(server: FakeLLMServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sync_client:
        yield sync_client


def tagged(scenario: str, **headers: str) -> dict[str, dict[str, str]]:
    """Request options naming the scenario (and any other headers)."""
    return {"extra_headers": {"X-Scenario": scenario, **headers}}


def words(text: str) -> list[str]:
    return text.split()


def words_with_space(text: str) -> list[str]:
    """The streamed tokens of a reply."""
    return [w + " " for w in words(text)]


def stream_text(chunks) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for a condition that must become true (a generous bound: a busy machine is slow)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def in_async_client(server: FakeLLMServer, work, **options):
    """Run ``work(async_client)`` in a fresh event loop."""

    async def main():
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=options.pop("max_retries", 0), **options
        ) as async_client:
            return await work(async_client)

    return asyncio.run(main())


# --- Model names -----------------------------------------------------------------------------


def test_model_options_are_parsed():
    assert parse_model("fake") == Scenario(base="fake")
    assert parse_model("fake:ttft=300:tps=30:tokens=120") == Scenario(
        base="fake", ttft=0.3, tps=30, tokens=120
    )
    assert parse_model("fake:fail=429:times=2:retry_after=1") == Scenario(
        base="fake", fail=429, times=2, retry_after=1
    )
    assert parse_model("fake:garbage:empty:cut=3:timeout=0.5") == Scenario(
        base="fake", garbage=True, empty=True, cut=3, timeout=0.5
    )
    assert scenario_key("fake:cut=3") == "fake:cut=3"
    assert scenario_key("fake:cut=3", "t1") == "fake:cut=3|t1"


@pytest.mark.parametrize(
    "model",
    [
        "fake:bogus",
        "fake:tps",
        "fake:tps=fast",
        "fake:tokens=-1",
        "fake:garbage=1",
        "fake:fail=200",
        "fake:tps=inf",
        "fake:timeout=nan",
        "fake:tps=1:tps=2",
        ":x",
    ],
)
def test_invalid_model_options_are_refused(client: openai.OpenAI, model: str):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=model, messages=PROMPT)
    assert caught.value.status_code == 400
    assert caught.value.param == "model"
    assert caught.value.type == "invalid_request_error"


# --- Replies ---------------------------------------------------------------------------------


def test_health_and_models(server: FakeLLMServer, client: openai.OpenAI):
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    assert [m.id for m in client.models.list()] == ["fake"]
    assert client.models.retrieve("fake").owned_by == "fakellm"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-nothing")


def test_reply_shape_and_usage(client: openai.OpenAI):
    reply = client.chat.completions.create(model="fake", messages=PROMPT)
    assert reply.object == "chat.completion"
    assert reply.id.startswith("chatcmpl-")
    assert reply._request_id.startswith("req_")
    assert reply.model == "fake"
    assert abs(reply.created - time.time()) < 5
    choice = reply.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert len(words(choice.message.content)) == 40
    assert choice.message.content.endswith(" ")
    assert choice.message.content == reply_text("fake", PROMPT)
    assert reply.usage.prompt_tokens == PROMPT_WORDS
    assert reply.usage.completion_tokens == 40
    assert reply.usage.total_tokens == PROMPT_WORDS + 40


def test_reply_is_deterministic_per_prompt_and_model(client: openai.OpenAI):
    def ask(model: str, prompt: str) -> str:
        messages = [{"role": "user", "content": prompt}]
        return client.chat.completions.create(model=model, messages=messages).choices[0].message.content

    first = ask("fake", "Who did it?")
    assert ask("fake", "Who did it?") == first
    assert ask("fake", "Who did it, really?") != first
    assert ask("other", "Who did it?") != first
    assert ask("fake:tokens=7", "Who did it?") == " ".join(words(first)[:7]) + " "
    assert ask("fake:ttft=1:tps=1000", "Who did it?") == first


def test_content_parts_count_as_text(client: openai.OpenAI):
    messages = [{"role": "user", "content": [{"type": "text", "text": "three little words"}]}]
    reply = client.chat.completions.create(model="fake", messages=messages)
    assert reply.usage.prompt_tokens == 3
    assert reply.choices[0].message.content == reply_text(
        "fake", [{"role": "user", "content": "three little words"}]
    )


def test_max_tokens_truncates_with_finish_reason_length(client: openai.OpenAI):
    reply = client.chat.completions.create(model="fake", messages=PROMPT, max_tokens=5)
    assert len(words(reply.choices[0].message.content)) == 5
    assert reply.choices[0].finish_reason == "length"
    chunks = list(client.chat.completions.create(model="fake", messages=PROMPT, max_tokens=5, stream=True))
    assert stream_text(chunks) == reply.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == "length"


def test_empty_reply(client: openai.OpenAI):
    reply = client.chat.completions.create(model="fake:empty", messages=PROMPT)
    assert reply.choices[0].message.content == ""
    assert reply.usage.completion_tokens == 0
    chunks = list(
        client.chat.completions.create(
            model="fake:empty", messages=PROMPT, stream=True, stream_options={"include_usage": True}
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert stream_text(chunks) == ""
    assert chunks[-1].usage.completion_tokens == 0


# --- Streaming -------------------------------------------------------------------------------


@pytest.mark.parametrize("include_usage", [True, False])
def test_stream_gives_the_same_text(client: openai.OpenAI, include_usage: bool):
    whole = client.chat.completions.create(model="fake:tokens=25", messages=PROMPT)
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    chunks = list(
        client.chat.completions.create(model="fake:tokens=25", messages=PROMPT, stream=True, **options)
    )
    assert all(c.object == "chat.completion.chunk" and c.model == "fake:tokens=25" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert stream_text(chunks) == whole.choices[0].message.content
    if include_usage:
        *text_chunks, last = chunks
        assert last.choices == []
        assert last.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}) == {
            "prompt_tokens": PROMPT_WORDS,
            "completion_tokens": 25,
            "total_tokens": PROMPT_WORDS + 25,
        }
    else:
        text_chunks = chunks
        assert all(c.usage is None for c in chunks)
    assert text_chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.choices[0].finish_reason is None for c in text_chunks[:-1])
    assert len(text_chunks) == 1 + 25 + 1  # role, one per token, finish


def test_async_stream_gives_the_same_text(server: FakeLLMServer):
    async def work(async_client: openai.AsyncOpenAI):
        whole = await async_client.chat.completions.create(model="fake", messages=PROMPT)
        stream = await async_client.chat.completions.create(
            model="fake", messages=PROMPT, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
        return whole, chunks

    whole, chunks = in_async_client(server, work)
    assert stream_text(chunks) == whole.choices[0].message.content == reply_text("fake", PROMPT)
    assert chunks[-1].usage.total_tokens == whole.usage.total_tokens


def test_raw_stream_is_server_sent_events(server: FakeLLMServer):
    body = {"model": "fake:tokens=3", "messages": PROMPT, "stream": True}
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        raw = response.read().decode()
    events = raw.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    assert all(e.startswith("data: ") for e in events[:-1])
    payloads = [json.loads(e.removeprefix("data: ")) for e in events[:-2]]
    assert [p["choices"][0]["delta"].get("content") for p in payloads] == [""] + words_with_space(
        reply_text("fake", PROMPT, max_tokens=3)
    ) + [None]


# --- Pacing ----------------------------------------------------------------------------------


def test_ttft_delays_first_token(server: FakeLLMServer, client: openai.OpenAI, scenario: str):
    # Lower bounds only: the server cannot answer before it has waited (timing is bench/'s).
    started = time.perf_counter()
    client.chat.completions.create(model="fake:ttft=300:tokens=3", messages=PROMPT)
    assert time.perf_counter() - started >= 0.28

    started = time.perf_counter()
    stream = client.chat.completions.create(
        model="fake:ttft=300:tokens=3",
        messages=PROMPT,
        stream=True,
        **tagged(scenario, **{"X-Record-Timing": "1"}),
    )
    headers_at = time.time()  # the headers are in: create() returned
    first_token_at = None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content and first_token_at is None:
            first_token_at = time.perf_counter() - started
    assert first_token_at >= 0.28
    [timing] = [t for t in server.stats()["timings"] if t["scenario"].endswith(f"|{scenario}")]
    assert timing["ttft_ms"] >= 295
    assert headers_at < timing["sent_at"][0]  # the headers came before the server sent a token


def test_tps_paces_tokens_and_server_records_timing(
    server: FakeLLMServer, client: openai.OpenAI, scenario: str
):
    stream = client.chat.completions.create(
        model="fake:tokens=20:tps=100",
        messages=PROMPT,
        stream=True,
        **tagged(scenario, **{"X-Record-Timing": "1"}),
    )
    seen = [chunk for chunk in stream if chunk.choices and chunk.choices[0].delta.content]
    assert len(seen) == 20

    [timing] = [t for t in server.stats()["timings"] if t["scenario"] == f"fake:tokens=20:tps=100|{scenario}"]
    assert len(timing["gaps_ms"]) == 19
    assert sum(timing["gaps_ms"]) >= 185  # 19 gaps of 10 ms at least, on an absolute schedule


def test_timing_is_recorded_only_when_asked(server: FakeLLMServer, client: openai.OpenAI, scenario: str):
    list(
        client.chat.completions.create(
            model="fake:tokens=2", messages=PROMPT, stream=True, **tagged(scenario)
        )
    )
    assert not [t for t in server.stats()["timings"] if t["scenario"].endswith(scenario)]


# --- Failures --------------------------------------------------------------------------------


def test_rate_limit_with_retry_after_then_success(
    server: FakeLLMServer, client: openai.OpenAI, scenario: str
):
    model = "fake:fail=429:times=2:retry_after=1"
    for nth in (1, 2):
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model=model, messages=PROMPT, **tagged(scenario))
        error = caught.value
        assert error.status_code == 429
        assert error.response.headers["retry-after"] == "1"
        assert error.code == "rate_limit_exceeded"
        assert error.body["message"].endswith(f"injected failure {nth} of 2)")
    reply = client.chat.completions.create(model=model, messages=PROMPT, **tagged(scenario))
    assert reply.choices[0].message.content == reply_text(model, PROMPT)
    assert server.stats()["requests"][scenario_key(model, scenario)] == 3

    # Another scenario key has its own count; so has the `user` field.
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model=model, messages=PROMPT, **tagged(scenario + "-b"))
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model=model, messages=PROMPT, user=scenario + "-c")
    assert server.stats()["requests"][scenario_key(model, scenario + "-c")] == 1


def test_client_retries_honour_retry_after(server: FakeLLMServer, scenario: str):
    model = "fake:fail=503:times=2:retry_after=0.3"
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=2) as retrying:
        started = time.perf_counter()
        reply = retrying.chat.completions.create(model=model, messages=PROMPT, **tagged(scenario))
    assert time.perf_counter() - started >= 0.55
    assert reply.choices[0].message.content
    assert server.stats()["requests"][scenario_key(model, scenario)] == 3


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (408, openai.APIStatusError),
        (409, openai.ConflictError),
        (422, openai.UnprocessableEntityError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (502, openai.InternalServerError),
        (503, openai.InternalServerError),
        (504, openai.InternalServerError),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_injected_status_errors(client: openai.OpenAI, scenario: str, status: int, error_class, stream: bool):
    model = f"fake:fail={status}"
    with pytest.raises(error_class) as caught:
        client.chat.completions.create(model=model, messages=PROMPT, stream=stream, **tagged(scenario))
    assert type(caught.value) is error_class
    assert caught.value.status_code == status
    assert "retry-after" not in caught.value.response.headers
    assert caught.value.body["type"] in ("invalid_request_error", "requests", "server_error")


def test_timeout_raises_api_timeout_error(server: FakeLLMServer, client: openai.OpenAI, scenario: str):
    model = "fake:timeout=30"
    for stream in (False, True):  # the 30 s the server would wait prove the timeout fired
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(
                model=model, messages=PROMPT, stream=stream, timeout=0.3, **tagged(scenario)
            )

    # The server noticed the hang-ups and dropped the waiting requests at once.
    wait_until(lambda: server.stats()["totals"]["in_flight"] == 0)


def test_timeout_while_streaming(client: openai.OpenAI):
    stream = client.chat.completions.create(
        model="fake:tokens=5:tps=2", messages=PROMPT, stream=True, timeout=httpx.Timeout(5, read=0.2)
    )
    texts = []
    with pytest.raises(openai.APITimeoutError):
        for chunk in stream:
            texts.append(chunk.choices[0].delta.content)
    assert texts == ["", words_with_space(reply_text("fake", PROMPT))[0]]


def test_garbage_raises_json_decode_error(client: openai.OpenAI):
    with pytest.raises(json.JSONDecodeError):
        client.chat.completions.create(model="fake:garbage", messages=PROMPT)
    stream = client.chat.completions.create(model="fake:garbage", messages=PROMPT, stream=True)
    with pytest.raises(json.JSONDecodeError):
        next(iter(stream))


def test_cut_gives_text_then_connection_error(server: FakeLLMServer, client: openai.OpenAI, scenario: str):
    stream = client.chat.completions.create(
        model="fake:cut=20", messages=PROMPT, stream=True, **tagged(scenario)
    )
    texts = []
    with pytest.raises(openai.APIConnectionError) as caught:
        for chunk in stream:
            texts.append(chunk.choices[0].delta.content)
    assert type(caught.value) is openai.APIConnectionError
    assert "incomplete chunked read" in str(caught.value.__cause__)
    assert "".join(texts) == " ".join(words(reply_text("fake", PROMPT))[:20]) + " "
    assert server.stats()["requests"][scenario_key("fake:cut=20", scenario)] == 1


def test_async_client_sees_the_same_failures(server: FakeLLMServer):
    async def raised(async_client: openai.AsyncOpenAI, model: str, stream: bool, timeout: float = 5):
        texts = []
        try:
            response = await async_client.chat.completions.create(
                model=model, messages=PROMPT, stream=stream, timeout=timeout
            )
            if stream:
                async for chunk in response:
                    texts.append(chunk.choices[0].delta.content if chunk.choices else "")
        except Exception as error:  # noqa: BLE001 (which one is what the test is about)
            return type(error), "".join(texts)
        return None, "".join(texts)

    async def work(async_client: openai.AsyncOpenAI):
        cases = [
            ("fake:fail=429:retry_after=2", False, 5),
            ("fake:fail=500", True, 5),
            ("fake:timeout=30", False, 0.3),
            ("fake:timeout=30", True, 0.3),
            ("fake:garbage", False, 5),
            ("fake:garbage", True, 5),
            ("fake:cut=3", True, 5),
        ]
        return await asyncio.gather(*(raised(async_client, *case) for case in cases))

    [rate, server_error, timeout, stream_timeout, garbage, stream_garbage, cut] = in_async_client(
        server, work
    )
    assert rate == (openai.RateLimitError, "")
    assert server_error == (openai.InternalServerError, "")
    assert timeout == stream_timeout == (openai.APITimeoutError, "")
    assert garbage == stream_garbage == (json.JSONDecodeError, "")
    assert cut == (openai.APIConnectionError, " ".join(words(reply_text("fake", PROMPT))[:3]) + " ")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', "model"),
        (b'{"model": "fake"}', "messages"),
        (b'{"model": "fake", "messages": []}', "messages"),
        (b'{"model": "fake", "messages": ["hi"]}', "messages"),
        (
            b'{"model": "fake", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}',
            "max_tokens",
        ),
    ],
)
def test_malformed_requests_get_400(server: FakeLLMServer, body: bytes, param: str | None):
    response = httpx.post(f"{server.base_url}/chat/completions", content=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert error["message"]


def test_unknown_routes(server: FakeLLMServer):
    assert httpx.get(f"{server.base_url}/embeddings").status_code == 404
    assert httpx.get(f"{server.base_url}/chat/completions").status_code == 405
    assert httpx.get(f"{server.url}/_reset").status_code == 405


# --- Counters --------------------------------------------------------------------------------


def test_stats_and_reset_over_http():
    with run_in_thread(application=FakeLLM(models=["fake", "fake-large"])) as own:
        with openai.OpenAI(base_url=own.base_url, api_key="test", max_retries=0) as own_client:
            assert [m.id for m in own_client.models.list()] == ["fake", "fake-large"]
            own_client.chat.completions.create(model="fake", messages=PROMPT)
            list(own_client.chat.completions.create(model="fake", messages=PROMPT, stream=True, user="u1"))
            with pytest.raises(openai.RateLimitError):
                own_client.chat.completions.create(model="fake:fail=429", messages=PROMPT)
            with pytest.raises(openai.BadRequestError):
                own_client.chat.completions.create(model="fake:nope", messages=PROMPT)

            stats = httpx.get(f"{own.url}/_stats").json()
            assert stats["requests"] == {"fake": 1, "fake|u1": 1, "fake:fail=429": 1, "fake:nope": 1}
            totals = stats["totals"]
            assert totals["requests"] == 4
            assert (totals["ok"], totals["streamed"], totals["failed"], totals["bad_request"]) == (2, 1, 1, 1)
            assert totals["completion_tokens"] == 80
            assert totals["prompt_tokens"] == 2 * PROMPT_WORDS
            assert totals["in_flight"] == 0
            assert stats["timings"] == []
            assert "timings" not in httpx.get(f"{own.url}/_stats?timings=0").json()

            assert httpx.post(f"{own.url}/_reset").status_code == 200
            assert httpx.get(f"{own.url}/_stats").json()["requests"] == {}
            with pytest.raises(openai.RateLimitError):  # counting starts again
                own_client.chat.completions.create(model="fake:fail=429", messages=PROMPT)


def test_timings_are_capped():
    with run_in_thread(application=FakeLLM(timing_cap=3)) as own:
        with openai.OpenAI(
            base_url=own.base_url, api_key="test", max_retries=0, default_headers={"X-Record-Timing": "1"}
        ) as own_client:
            for n in range(5):
                list(
                    own_client.chat.completions.create(model=f"fake:tokens={n}", messages=PROMPT, stream=True)
                )
        assert [t["scenario"] for t in own.stats()["timings"]] == [
            "fake:tokens=2",
            "fake:tokens=3",
            "fake:tokens=4",
        ]
        assert [len(t["gaps_ms"]) for t in own.stats()["timings"]] == [1, 2, 3]


# --- Load and processes ----------------------------------------------------------------------


def test_200_concurrent_streams():
    count = 200
    model = f"fake:together={count}:tps=100:tokens=20"  # held until all 200 are in flight

    async def one(async_client: openai.AsyncOpenAI, n: int) -> tuple[str, str, int]:
        messages = [{"role": "user", "content": f"Question number {n}"}]
        stream = await async_client.chat.completions.create(
            model=model, messages=messages, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
        return stream_text(chunks), reply_text(model, messages), chunks[-1].usage.completion_tokens

    async def work(async_client: openai.AsyncOpenAI):
        return await asyncio.gather(*(one(async_client, n) for n in range(count)))

    with run_in_thread() as own:
        results = in_async_client(own, work)
        stats = own.stats()
    assert all(got == expected for got, expected, _ in results)
    assert len({got for got, _, _ in results}) > count * 0.9  # different prompts, different replies
    assert all(tokens == 20 for _, _, tokens in results)
    assert stats["totals"]["ok"] == count
    assert stats["totals"]["max_in_flight"] == count


def test_subprocess_server():
    with run_in_subprocess(models=["fake", "fake-large"]) as base_url:
        assert base_url.endswith("/v1")
        with openai.OpenAI(base_url=base_url, api_key="test", max_retries=0) as sub_client:
            assert [m.id for m in sub_client.models.list()] == ["fake", "fake-large"]
            chunks = list(
                sub_client.chat.completions.create(model="fake:tps=200", messages=PROMPT, stream=True)
            )
            assert stream_text(chunks) == reply_text("fake", PROMPT)
            with pytest.raises(openai.APIConnectionError):
                list(sub_client.chat.completions.create(model="fake:cut=2", messages=PROMPT, stream=True))
        stats = httpx.get(base_url.removesuffix("/v1") + "/_stats").json()
        assert stats["totals"]["cut"] == 1
