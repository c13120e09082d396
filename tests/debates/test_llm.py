"""The LLM adapter's openai backend against our own OpenAI-compatible server on loopback:
the real `openai` client, streaming included, with rate limits, timeouts and garbage."""

import secrets
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync

from debates import llm
from debates.models import LiveSession, LiveTurn, LLMCall
from devtools import fakellm
from tests.support.cast import Walker
from tests.support.live import drain_turns


@pytest.fixture(scope="module")
def server():
    with fakellm.run_in_thread() as running:
        yield running


@pytest.fixture
def openai_backend(settings, server):
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.LLM_BACKOFF_S = 0.05
    settings.LLM_MAX_RETRIES = 3
    settings.LLM_TIMEOUT_S = 5
    return server


def model(options: str = "") -> str:
    """A base name of its own per test, so the server's counters are the test's own."""
    return f"fake-{secrets.token_hex(4)}{options}"


def request(name: str, text: str = "Is the claim true?") -> llm.LLMRequest:
    return llm.LLMRequest(model=name, messages=[{"role": "user", "content": text}], max_tokens=400)


def stream(req: llm.LLMRequest) -> tuple[llm.LLMResult, list[str]]:
    pieces: list[str] = []

    async def on_text(piece: str) -> None:
        pieces.append(piece)

    result = async_to_sync(llm.stream)(req, on_text)
    return result, pieces


def requests_made(server, name: str) -> int:
    return server.stats(timings=False)["requests"].get(fakellm.scenario_key(name), 0)


def test_a_streamed_reply_arrives_piece_by_piece_with_usage(openai_backend):
    name = model(":tokens=30:tps=300")
    req = request(name)
    result, pieces = stream(req)
    assert len(pieces) == 30
    assert result.text == "".join(pieces) == fakellm.reply_text(name, req.messages)
    assert result.tokens_in == 4 and result.tokens_out == 30
    assert result.backend == "openai" and result.attempts == 1
    assert result.ttft_ms is not None and result.total_ms >= result.ttft_ms


@pytest.mark.parametrize("streaming", [True, False])
def test_a_conversation_reaches_the_model_exactly_as_built(openai_backend, streaming):
    """Every message, in order, with its role and its text as given (the adapter hands them
    to the client's body as they are, not through its parameter transform)."""
    name = model(":tokens=5")
    messages = [
        {"role": "system", "content": "You argue that the claim is true.\n\n<sources>…</sources>"},
        {"role": "user", "content": "Opening statement, please."},
        {"role": "assistant", "content": 'The evidence says "yes": see source 2.'},
        {"role": "user", "content": "Why should I trust it? Ünïcode & <tags> too."},
    ]
    req = llm.LLMRequest(model=name, messages=messages, max_tokens=50, temperature=0.3, seed=7)
    recording = openai_backend.app.record_timing
    openai_backend.app.record_timing = True
    try:
        result = stream(req)[0] if streaming else async_to_sync(llm.complete)(req)
    finally:
        openai_backend.app.record_timing = recording
    assert result.text == fakellm.reply_text(name, messages)
    assert result.tokens_in == sum(len(m["content"].split()) for m in messages)
    if streaming:  # the server records what arrived, for streams
        digests = [
            t["messages_sha256"]
            for t in openai_backend.stats()["timings"]
            if t["scenario"] == fakellm.scenario_key(name)
        ]
        assert digests == [fakellm.messages_digest(messages)]


def test_time_to_first_token_is_measured(openai_backend):
    result, _ = stream(request(model(":ttft=300:tokens=3")))
    assert result.ttft_ms >= 280


def test_a_whole_reply_without_streaming(openai_backend):
    name = model(":tokens=12")
    req = request(name)
    result = async_to_sync(llm.complete)(req)
    assert result.text == fakellm.reply_text(name, req.messages)
    assert result.tokens_out == 12


def test_rate_limits_are_retried_after_the_servers_retry_after(openai_backend):
    name = model(":fail=429:times=2:retry_after=0.4")
    result, _ = stream(request(name))
    assert result.attempts == 3
    assert result.waits == [0.4, 0.4]  # the server's Retry-After, not the default backoff
    assert requests_made(openai_backend, name) == 3


def test_server_errors_give_up_after_the_retries_with_a_retryable_error(openai_backend, settings):
    name = model(":fail=500:times=50")
    with pytest.raises(llm.LLMError) as info:
        stream(request(name))
    assert info.value.kind == "http_500" and info.value.retryable
    assert info.value.attempts == settings.LLM_MAX_RETRIES + 1
    assert requests_made(openai_backend, name) == settings.LLM_MAX_RETRIES + 1


def test_a_bad_request_is_not_retried(openai_backend):
    name = model(":fail=400:times=50")
    with pytest.raises(llm.LLMError) as info:
        stream(request(name))
    assert info.value.kind == "http_400" and not info.value.retryable
    assert requests_made(openai_backend, name) == 1


def test_a_model_that_does_not_answer_times_out(openai_backend, settings):
    settings.LLM_TIMEOUT_S = 1
    settings.LLM_MAX_RETRIES = 0
    with pytest.raises(llm.LLMError) as info:
        stream(request(model(":timeout=10")))
    assert info.value.kind == "timeout" and info.value.retryable


@pytest.mark.parametrize("streaming", [True, False])
def test_garbage_is_a_malformed_reply(openai_backend, settings, streaming):
    settings.LLM_MAX_RETRIES = 0
    req = request(model(":garbage"))
    with pytest.raises(llm.LLMError) as info:
        stream(req) if streaming else async_to_sync(llm.complete)(req)
    assert info.value.kind == "malformed" and info.value.retryable


def test_an_empty_reply_is_malformed(openai_backend, settings):
    settings.LLM_MAX_RETRIES = 0
    with pytest.raises(llm.LLMError) as info:
        stream(request(model(":empty")))
    assert info.value.kind == "malformed"


def test_a_stream_cut_after_text_was_shown_is_not_retried(openai_backend):
    name = model(":cut=5:tps=50")  # paced: see the test of a cut turn below
    with pytest.raises(llm.LLMError) as info:
        stream(request(name))
    assert info.value.partial  # the text already handed out
    assert 4 <= len(info.value.partial.split()) <= 5
    assert requests_made(openai_backend, name) == 1


# --- Turns written by a real (fake) model ---------------------------------------------------


def in_chat(study, model_name: str) -> LiveSession:
    from debates.models import DebaterConfig

    DebaterConfig.objects.update(model=model_name)
    w = Walker(study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2")
    w.page()
    w.submit({"answer": "true", "confidence": "50"})
    return LiveSession.objects.get(participant__prolific_pid=w.pid)


def test_a_turn_is_written_by_the_model_and_recorded(openai_backend, claim_study):
    name = model(":tokens=25")
    session = in_chat(claim_study, name)
    drain_turns(session.pk)
    first = LiveTurn.objects.filter(session=session).order_by("seq").first()
    assert first.status == "done" and len(first.text.split()) == 25
    call = LLMCall.objects.get(turn=first)
    assert call.backend == "openai" and call.tokens_out == 25 and call.error_kind == ""
    assert call.model == name  # the configured model wrote it
    config = session.debater_a
    expected = (call.tokens_in * config.price_in_per_mtok + 25 * config.price_out_per_mtok) / 1_000_000
    assert call.cost_usd == pytest.approx(expected, abs=Decimal("0.000001"))  # stored to six decimals


def test_a_turn_the_model_keeps_failing_ends_failed_with_every_attempt_recorded(
    openai_backend, claim_study, settings
):
    settings.LLM_MAX_RETRIES = 0
    session = in_chat(claim_study, model(":fail=503:times=99"))
    drain_turns(session.pk)  # the runner re-queues; drain keeps running what is pending
    turn = LiveTurn.objects.filter(session=session).order_by("seq").first()
    assert turn.status == "failed"
    assert turn.attempts == settings.LIVE_TURN_MAX_ATTEMPTS
    calls = LLMCall.objects.filter(turn=turn).exclude(role="side_choice")
    assert calls.count() == settings.LIVE_TURN_MAX_ATTEMPTS
    assert set(calls.values_list("error_kind", flat=True)) == {"http_503"}


def test_a_reply_cut_mid_stream_is_written_again_from_the_start(openai_backend, claim_study, settings):
    # Paced (20 ms a token), so the first tokens are read before the connection drops; the
    # last token and the drop can reach the client in one read, and the HTTP client then
    # raises before handing over what it holds (seen once in CI at full speed: a partial of
    # fewer than 4 words).
    session = in_chat(claim_study, model(":cut=4:tps=50"))
    drain_turns(session.pk)
    turn = LiveTurn.objects.filter(session=session).order_by("seq").first()
    # Every attempt is cut: each is recorded with its partial text, then the turn fails.
    assert turn.status == "failed" and turn.text == ""
    partials = list(LLMCall.objects.filter(turn=turn).values_list("output", flat=True))
    assert len(partials) == settings.LIVE_TURN_MAX_ATTEMPTS
    longest = max(partials, key=len)
    assert all(3 <= len(p.split()) <= 4 and longest.startswith(p) for p in partials), partials
