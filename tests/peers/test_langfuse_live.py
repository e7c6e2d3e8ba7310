"""Live: the real Langfuse SDK (side venv `.venv-peer-langfuse`, built by `make peers-record`), given the
collector's address as its base URL, exports to the collector with no other change (its exporter posts to
`<base_url>/api/public/otel/v1/traces` with Basic auth): one `llm_calls` row per call, in the tenant whose
token is the SDK's secret key."""

from __future__ import annotations

import pytest

from collector.auth import hash_token
from tests.collector.conftest import Collector
from tests.collector.test_langfuse_endpoint import call_rows
from tests.peers.harness import BY_NAME, USAGE, fake_providers, run_sender
from verdict.tenancy import validate_tenant_id

pytestmark = pytest.mark.peers
SENDER = BY_NAME["langfuse"]
SECRET_KEY = "sk-lf-peer"  # what tests/peers/senders/langfuse_openai.py passes to Langfuse()
TENANT = validate_tenant_id("acme")


def test_langfuse_sdk_exports_to_the_collector_by_base_url(tmp_path):
    if not SENDER.installed():
        pytest.fail("side environment of langfuse missing: run `make peers-record` first")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f'"{hash_token(SECRET_KEY)}": {TENANT}\n')
    collector = Collector(tmp_path / "data", ("--tokens", str(tokens))).start()
    try:
        with fake_providers() as (openai_server, anthropic_server):
            run = run_sender(SENDER, collector.url, openai_server, anthropic_server)
        stats = collector.stats()
    finally:
        assert collector.stop() == 0
    assert run.provider_requests == 2
    assert stats["requests_unauthenticated"] == 0 and stats["spans_written"] > 0, stats
    assert call_rows(collector.data_dir, TENANT) == [("langfuse", "gpt-4o-mini", *USAGE[0]), ("langfuse", "gpt-4o-mini", *USAGE[1])]
