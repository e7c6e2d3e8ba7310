"""The path the Langfuse SDK's exporter posts to (`<base_url>/api/public/otel/v1/traces`) with its Basic
auth (`public_key:secret_key`, the secret key being the token), on the real collector process, with the
body the real SDK sent (tests/fixtures/dialects/langfuse); tests/peers/test_langfuse_live.py runs the SDK."""

from __future__ import annotations

import base64
import http.client
from pathlib import Path

import pytest

from collector.auth import hash_token
from collector.views import open_scoped
from tests.collector.conftest import Collector
from verdict.tenancy import validate_tenant_id

RECORDING = Path(__file__).parents[1] / "fixtures" / "dialects" / "langfuse" / "traces-1.pb"
SECRET_KEY = "sk-lf-short"  # shorter than a plain token may be: listed hashed, as the docs say
TENANT = validate_tenant_id("acme")


@pytest.fixture
def collector(tmp_path):
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f'"{hash_token(SECRET_KEY)}": {TENANT}\n')
    c = Collector(tmp_path / "data", ("--tokens", str(tokens))).start()
    yield c
    c.stop()


def _post(collector: Collector, path: str, authorization: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
    conn.request("POST", path, body=RECORDING.read_bytes(),
                 headers={"Content-Type": "application/x-protobuf", "Authorization": authorization})
    response = conn.getresponse()
    return response.status, response.read()


def call_rows(data_dir: Path, tenant) -> list[tuple]:
    """(dialect, request_model, input_tokens, output_tokens) of the tenant's llm_calls, by start time."""
    con = open_scoped(data_dir, tenant)
    try:
        return con.execute("SELECT dialect, request_model, input_tokens, output_tokens FROM llm_calls "
                           "ORDER BY start_time").fetchall()
    finally:
        con.close()


def _basic(public_key: str, secret_key: str) -> str:
    return "Basic " + base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()


def test_langfuse_path_with_basic_auth_lands_in_the_token_tenant(collector):
    status, body = _post(collector, "/api/public/otel/v1/traces", _basic("pk-lf-any", SECRET_KEY))
    assert status == 200, body
    assert collector.stop() == 0
    assert call_rows(collector.data_dir, TENANT) == [("langfuse", "gpt-4o-mini", 41, 17), ("langfuse", "gpt-4o-mini", 23, 11)]


@pytest.mark.parametrize("authorization", [
    "Basic " + base64.b64encode(b"pk-lf-any:sk-lf-wrong").decode(),  # another secret key
    "Basic " + base64.b64encode(SECRET_KEY.encode()).decode(),  # no `public:secret` pair
    "Basic not-base64!",
    f"Digest {SECRET_KEY}",
])
def test_langfuse_path_refuses_what_v1_traces_refuses(collector, authorization):
    for path in ("/api/public/otel/v1/traces", "/v1/traces"):
        status, body = _post(collector, path, authorization)
        assert status == 401, (path, body)
    assert collector.stats()["spans_received"] == 0


def test_bearer_still_works_on_the_langfuse_path(collector):
    status, body = _post(collector, "/api/public/otel/v1/traces", f"Bearer {SECRET_KEY}")
    assert status == 200, body
    assert collector.stats()["spans_written"] > 0
