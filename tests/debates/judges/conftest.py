"""The fake OpenAI-compatible server on loopback as the judges' model, for these tests."""

import pytest

from devtools import fakellm


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
