"""The test-only job kind, registered for these tests; the fake OpenAI-compatible server on
loopback as the model (its replies cost money at the kind's prices)."""

import pytest

from debates.jobs import kinds
from devtools import fakellm
from tests.debates.jobs import support


@pytest.fixture(autouse=True)
def echo_kind():
    kinds.register(support.EchoKind)
    support.HOOKS.clear()
    yield
    support.HOOKS.clear()
    kinds.unregister(support.KEY)


@pytest.fixture(scope="module")
def fake_server():
    with fakellm.run_in_thread() as running:
        yield running


@pytest.fixture
def openai_backend(settings, fake_server):
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = fake_server.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.LLM_BACKOFF_S = 0.01
    settings.LLM_MAX_RETRIES = 1
    settings.LLM_TIMEOUT_S = 10
    yield fake_server
    fake_server.app.responder = None
