"""Malformed input (hypothesis over protobuf bytes and OTLP JSON): always a 4xx or a 200 with the bad
spans rejected — never a 5xx, never a crash — and the next valid request succeeds."""

from __future__ import annotations

import http.client
import json
import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collector.loadgen import export_request

PB = "application/x-protobuf"
VALID = export_request(random.Random(3), 2, time.time_ns())
VALID_BYTES = VALID.SerializeToString()


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    from tests.collector.conftest import Collector

    c = Collector(tmp_path_factory.mktemp("fuzz") / "data").start()
    yield c
    c.kill9()


def post(collector, body: bytes, content_type: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
    conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": content_type})
    response = conn.getresponse()
    response.read()
    return response.status


def _mutations():
    raw = st.binary(max_size=2048)
    flipped = st.tuples(st.integers(0, len(VALID_BYTES) - 1), st.integers(0, 255)).map(
        lambda p: VALID_BYTES[: p[0]] + bytes([p[1]]) + VALID_BYTES[p[0] + 1:])
    truncated = st.integers(0, len(VALID_BYTES)).map(lambda n: VALID_BYTES[:n])
    return st.one_of(raw, flipped, truncated)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
otlp_keys = st.sampled_from(["resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "attributes", "key",
                             "value", "stringValue", "intValue", "startTimeUnixNano", "events", "links", "kind"])
otlp_like = st.recursive(
    json_values,
    lambda children: st.dictionaries(otlp_keys, children, max_size=5) | st.lists(children, max_size=3),
    max_leaves=30,
)


def _check(collector, status: int) -> None:
    assert status < 500, f"server error {status}"
    assert status in (200, 400, 413), status
    assert collector.proc.poll() is None


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=_mutations())
def test_protobuf_garbage(collector, body):
    _check(collector, post(collector, body, PB))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=otlp_like)
def test_json_garbage(collector, doc):
    _check(collector, post(collector, json.dumps(doc).encode(), "application/json"))


def test_valid_request_after_fuzzing(collector):
    assert post(collector, VALID_BYTES, PB) == 200
    assert collector.stats()["spans_written"] >= 2
