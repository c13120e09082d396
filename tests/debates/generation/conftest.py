"""The fake OpenAI-compatible server on loopback as the model (tests/debates/jobs' fixtures)."""

from tests.debates.jobs.conftest import fake_server, openai_backend  # noqa: F401
