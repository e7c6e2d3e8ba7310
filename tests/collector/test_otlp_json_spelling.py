"""OTLP/JSON field spellings (lowerCamelCase or the .proto's snake_case) against the real collector process:
a body spelling one field both ways, repeating a key, or holding an id that is not hex is refused with 400
naming it and stores nothing; any other body is answered 200 with every span either stored or counted
rejected (partial_success and /stats). Nothing acknowledged is dropped."""

from __future__ import annotations

import http.client
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.collector.conftest import Collector, read_spans

JSON = "application/json"


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    # No compaction: the test reads the segments while the collector runs.
    c = Collector(tmp_path_factory.mktemp("spelling") / "data",
                  ("--compact-interval-s", "0", "--compact-after-segments", "0")).start()
    yield c
    c.kill9()


def post(collector: Collector, body: bytes, path: str = "/v1/traces") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30)
    conn.request("POST", path, body=body, headers={"Content-Type": JSON})
    response = conn.getresponse()
    return response.status, response.read()


@dataclass
class Body:
    """A drawn request body and what the collector must make of it."""

    doc: dict = field(default_factory=dict)
    span_ids: list[str] = field(default_factory=list)  # every span object in the body, all spellings
    stored: set[str] = field(default_factory=set)  # span ids that must land
    conflicts: list[str] = field(default_factory=list)  # fields spelled both ways
    bad_hex: int = 0  # ids that are not hex: the whole body is refused


class Drawer:
    """Builds one OTLP/JSON traces body, each key in a drawn spelling; with `mix`, some fields also appear
    in the other spelling with other content (the request must then be refused as a whole)."""

    def __init__(self, draw, mix: bool):
        self.draw, self.mix, self.body = draw, mix, Body()
        self._ids = itertools.count(1)
        self._prefix = uuid.uuid4().hex[:8]  # fresh per body: spans of earlier bodies never match

    def put(self, obj: dict, camel: str, snake: str, make) -> None:
        obj[self.draw(st.sampled_from((camel, snake)))] = make()
        if self.mix and camel != snake and self.draw(st.integers(0, 7)) == 0:
            obj[snake if camel in obj else camel] = make()
            self.body.conflicts.append(camel)

    def span(self) -> dict:
        n = next(self._ids)
        span_id = f"{self._prefix}{n:08x}"
        trace_id = self.draw(st.sampled_from(["valid"] * 6 + ["short", "not hex"]))
        self.body.span_ids.append(span_id)
        if trace_id == "valid":
            self.body.stored.add(span_id)
        self.body.bad_hex += trace_id == "not hex"
        now = str(time.time_ns())
        value = {"valid": f"{span_id:0>32}", "short": "abcdef", "not hex": f"zz{n:030x}"}[trace_id]
        span: dict = {"name": "spelling"}
        self.put(span, "traceId", "trace_id", lambda: value)
        self.put(span, "spanId", "span_id", lambda: span_id)
        self.put(span, "startTimeUnixNano", "start_time_unix_nano", lambda: now)
        self.put(span, "endTimeUnixNano", "end_time_unix_nano", lambda: now)
        if self.draw(st.booleans()):
            self.put(span, "parentSpanId", "parent_span_id", lambda: "00000000000000ab")
        if self.draw(st.booleans()):
            self.put(span, "attributes", "attributes", lambda: [self.attribute()])
        return span

    def attribute(self) -> dict:
        value: dict = {}
        self.put(value, "stringValue", "string_value", lambda: "v")
        return {"key": "k", "value": value}

    def many(self, make) -> list:
        return [make() for _ in range(self.draw(st.integers(0, 3)))]

    def scope(self) -> dict:
        scope: dict = {}
        self.put(scope, "spans", "spans", lambda: self.many(self.span))
        return scope

    def resource(self) -> dict:
        resource: dict = {}
        self.put(resource, "scopeSpans", "scope_spans", lambda: self.many(self.scope))
        return resource


@st.composite
def bodies(draw) -> Body:
    drawer = Drawer(draw, mix=draw(st.booleans()))
    drawer.put(drawer.body.doc, "resourceSpans", "resource_spans", lambda: drawer.many(drawer.resource))
    return drawer.body


def _counted(collector: Collector) -> int:
    stats = collector.stats()
    return stats["spans_received"] + stats["spans_rejected"]


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_200_means_every_span_stored_or_counted_rejected(collector, data):
    body = data.draw(bodies())
    counted_before = _counted(collector)
    status, answer = post(collector, json.dumps(body.doc).encode())
    ids = ", ".join(f"'{i}'" for i in body.span_ids) or "''"
    stored = {row["span_id"] for row in read_spans(collector.data_dir, f"span_id IN ({ids})")}
    counted = _counted(collector) - counted_before
    if status == 200:  # acknowledged: each span is on disk or counted rejected, nothing dropped
        rejected = int(json.loads(answer).get("partialSuccess", {}).get("rejectedSpans", 0))
        assert len(stored) + rejected == len(body.span_ids) == counted, (stored, rejected, counted, body)
    else:  # refused as a whole: nothing of it stored
        assert status == 400 and stored == set() and counted == 0, (status, answer)
    assert (status == 400) == bool(body.conflicts or body.bad_hex), (status, answer)
    if status == 200:
        assert stored == body.stored
    else:
        reason = json.loads(answer)["message"]
        assert ("has both" in reason and bool(body.conflicts)) or ("not valid hex" in reason and body.bad_hex), reason


def _log_records(trace_id: str) -> list[dict]:
    return [{"time_unix_nano": str(time.time_ns()), "body": {"string_value": "hello"}, "trace_id": trace_id,
             "span_id": "00000000000000cd"}]


def _logs_stored(collector: Collector, trace_id: str) -> int:
    import duckdb

    [(count,)] = duckdb.connect().execute(
        f"SELECT count(*) FROM read_parquet('{collector.data_dir}/logs/*/*/*.parquet') WHERE trace_id = ?",
        [trace_id]).fetchall()
    return count


@pytest.mark.parametrize("level", ["resourceLogs", "scopeLogs", "logRecords"])
def test_logs_with_a_field_spelled_both_ways_are_400_and_not_stored(collector, level):
    first, second = uuid.uuid4().hex, uuid.uuid4().hex
    scope = {"logRecords": _log_records(first)}
    if level == "logRecords":
        scope["log_records"] = _log_records(second)
    resource = {"scopeLogs": [scope]}
    if level == "scopeLogs":
        resource["scope_logs"] = [{"logRecords": _log_records(second)}]
    doc = {"resourceLogs": [resource]}
    if level == "resourceLogs":
        doc["resource_logs"] = [{"scopeLogs": [{"logRecords": _log_records(second)}]}]
    status, answer = post(collector, json.dumps(doc).encode(), "/v1/logs")
    assert status == 400
    assert f"has both '{level}' and".encode() in answer
    # Only the next valid request is known to be on disk once answered: it carries the first id again.
    status, _ = post(collector, json.dumps({"resource_logs": [{"scope_logs": [
        {"log_records": _log_records(first)}]}]}).encode(), "/v1/logs")
    assert status == 200
    assert _logs_stored(collector, first) == 1 and _logs_stored(collector, second) == 0


def test_a_key_repeated_in_one_object_is_400(collector):
    status, answer = post(collector, b'{"resourceSpans": [], "resourceSpans": []}')
    assert status == 400
    assert b"appears twice" in answer
