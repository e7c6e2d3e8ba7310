"""The real-model tier (`pytest -m realmodel`): one llama.cpp server for the whole tier.

A missing environment FAILS the tier with what to run (`make realmodel-env`), unless
VERDICT_REALMODEL_UNAVAILABLE says why the build is impossible here: then every test skips with that reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.realmodel.server import UNAVAILABLE_ENV, LlamaServer, LocalServer, ServerUnavailable
from verdict.models.openai_model import OpenAIModel
from verdict.models.retry import RetryPolicy


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this directory is in the tier, marked or not (`-m "not realmodel"` leaves it out)."""
    here = os.path.dirname(__file__) + os.sep
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.realmodel)
            # CPU generation on a shared 2-core machine: minutes per test when the machine is busy.
            item.add_marker(pytest.mark.timeout(900))


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """llama.cpp's OpenAI-compatible server with SmolLM2-135M on a free loopback port."""
    reason = os.environ.get(UNAVAILABLE_ENV, "").strip()
    if reason:
        pytest.skip(f"real-model tier unavailable: {reason}")
    server = LlamaServer(tmp_path_factory.mktemp("llama") / "server.log")
    problem = None
    try:
        local = server.__enter__()
    except ServerUnavailable as exc:
        problem = str(exc)
    if problem is not None:  # outside the except block: the message alone, no chained traceback
        pytest.fail(problem, pytrace=False)
    yield local
    server.__exit__(None, None, None)


@dataclass
class Recorded:
    """A model client on the tier's server whose HTTP exchanges are recorded: (method path, status)."""

    model: OpenAIModel
    exchanges: list[tuple[str, int]] = field(default_factory=list)

    def statuses(self) -> list[int]:
        return [status for _, status in self.exchanges]

    def posts(self) -> list[tuple[str, int]]:
        """The model requests: without the GET /models the client sends once per endpoint and model, in
        whichever test of the tier happens to call the server first (counting it made tests order-dependent)."""
        return [exchange for exchange in self.exchanges if exchange[0].startswith("POST ")]


@pytest.fixture
def recorded(llama_server: LocalServer) -> Callable[..., Recorded]:
    """`recorded(**client options)`: the real `openai` client on the llama.cpp server, declared as the
    docs recommend for llama.cpp (no json_schema response format), one request at a time, recording every
    HTTP status it gets back."""
    import openai

    def make(**options: Any) -> Recorded:
        exchanges: list[tuple[str, int]] = []

        def record(response: Any) -> None:
            exchanges.append((f"{response.request.method} {response.request.url.path}", response.status_code))

        client = openai.OpenAI(base_url=llama_server.base_url, api_key="not-needed",
                               http_client=openai.DefaultHttpxClient(event_hooks={"response": [record]}))
        options = {"supports_json_schema": False, "retry": RetryPolicy(max_attempts=2, base_delay=0.1),
                   "rate_limits": None, "timeout": 600.0, **options}
        return Recorded(OpenAIModel(llama_server.model, client=client, **options), exchanges)

    return make


@pytest.fixture
def traced() -> Iterator[Any]:
    """Verdict tracing into an in-memory exporter (the tracing tests' own set-up)."""
    from tests.tracing.conftest import start, stop

    traced = start()
    try:
        yield traced
    finally:
        stop()
