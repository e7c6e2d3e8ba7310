"""Shared fixtures: the fake LLM servers (one per test session, reset before every test)."""

from collections.abc import Iterator

import pytest

from tests.fakes import FakeAnthropic, FakeOpenAI


@pytest.fixture(scope="session")
def _fake_openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="session")
def _fake_anthropic_server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def fake_openai(_fake_openai_server: FakeOpenAI) -> FakeOpenAI:
    """A fake OpenAI-compatible server on 127.0.0.1 with no script and no recorded requests."""
    _fake_openai_server.reset()
    return _fake_openai_server


@pytest.fixture
def fake_anthropic(_fake_anthropic_server: FakeAnthropic) -> FakeAnthropic:
    """A fake Anthropic Messages API server on 127.0.0.1 with no script and no recorded requests."""
    _fake_anthropic_server.reset()
    return _fake_anthropic_server
