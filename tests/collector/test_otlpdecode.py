"""The compiled OTLP trace decoder (collector._otlpdecode) against upb, the reference: for any bytes, it
either gives exactly the tuples (and so the rows) upb + spandata.from_message give, or abstains (None) and
the upb path decides; it never accepts what upb rejects, never crashes, never leaks."""

from __future__ import annotations

import functools
import gc
import random
import struct
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from collector import loadgen, otlp, spandata
from collector.decoding import VALUES_PER_SPAN
from collector.flatten import IngestPolicy, flatten
from collector.redaction import ServerRedaction

CAP = 40  # small, so generated strings cross it
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")  # the recursive strategies' repr


def test_the_compiled_decoder_is_built_and_loaded():
    """make test builds it in place (setup.py); without it every figure would measure the fallback."""
    assert spandata._otlpdecode is not None, "collector._otlpdecode is not built: python setup.py build_ext --inplace"


def check(data: bytes, cap: int = CAP) -> list[spandata.ResourceData] | None:
    got = spandata.compiled(data, cap)
    try:
        want = spandata.parse(data, cap)
    except otlp.RequestError:
        assert got is None, "the compiled decoder accepted bytes upb rejects"
        return None
    if got is not None:
        assert repr(got) == repr(want)  # repr: types too (True is not 1, 0.0 is not -0.0)
    return got


# --- wire-level requests: every field of what flatten reads, in any order, repeated, with unknown fields,
# wrong wire types, invalid UTF-8, over-long and negative varints, groups ---

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + payload


MSG = "msg"
SCHEMA: dict[str, dict[int, str | tuple[str, str]]] = {
    "Request": {1: (MSG, "ResourceSpans")},
    "ResourceSpans": {1: (MSG, "Resource"), 2: (MSG, "ScopeSpans"), 3: "string"},
    "Resource": {1: (MSG, "KeyValue"), 2: "varint", 3: (MSG, "EntityRef")},
    "EntityRef": {1: "string", 2: "string", 3: "string", 4: "string"},
    "ScopeSpans": {1: (MSG, "Scope"), 2: (MSG, "Span"), 3: "string"},
    "Scope": {1: "string", 2: "string", 3: (MSG, "KeyValue"), 4: "varint"},
    "Span": {1: "bytes", 2: "bytes", 3: "string", 4: "bytes", 16: "fixed32", 5: "string", 6: "varint",
             7: "fixed64", 8: "fixed64", 9: (MSG, "KeyValue"), 10: "varint", 11: (MSG, "Event"), 12: "varint",
             13: (MSG, "Link"), 14: "varint", 15: (MSG, "Status")},
    "Event": {1: "fixed64", 2: "string", 3: (MSG, "KeyValue"), 4: "varint"},
    "Link": {1: "bytes", 2: "bytes", 3: "string", 4: (MSG, "KeyValue"), 5: "varint", 6: "fixed32"},
    "Status": {2: "string", 3: "varint"},
    "KeyValue": {1: "string", 2: (MSG, "AnyValue"), 3: "varint"},
    "AnyValue": {1: "string", 2: "varint", 3: "varint", 4: "fixed64", 5: (MSG, "ArrayValue"),
                 6: (MSG, "KeyValueList"), 7: "bytes", 8: "varint"},
    "ArrayValue": {1: (MSG, "AnyValue")},
    "KeyValueList": {1: (MSG, "KeyValue")},
}
_WIRE = {"varint": 0, "fixed64": 1, "fixed32": 5, "string": 2, "bytes": 2}

_varints = st.one_of(st.sampled_from([0, 1, 2, 5, 127, 128, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63,
                                      2**64 - 1]),
                     st.integers(0, 2**64 - 1))
_doubles = st.floats(allow_nan=True, allow_infinity=True).map(lambda d: struct.pack("<d", d))
_surrogate_text = st.text(max_size=60).map(lambda s: s.encode("utf-8", "surrogatepass"))  # lone surrogates: invalid
_valid_texts = st.one_of(
    st.text(max_size=60).map(str.encode),
    st.sampled_from([b"", b"gen_ai.input.messages", b"gen_ai.output.messages", b"gen_ai.system_instructions",
                     b"verdict.tenant_id", b"caf\xc3\xa9"]),
)
_texts = st.one_of(
    _valid_texts,
    _surrogate_text,
    st.sampled_from([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]),  # invalid UTF-8
    st.binary(max_size=20),
)


def _scalar(kind: str, number: int, wild: bool = False):
    if kind == "varint":
        return _varints.map(lambda n: _field(number, 0, _varint(n)))
    if kind == "fixed64":
        return st.one_of(_doubles, st.integers(0, 2**64 - 1).map(lambda n: struct.pack("<Q", n))).map(
            lambda b: _field(number, 1, b))
    if kind == "fixed32":
        return st.integers(0, 2**32 - 1).map(lambda n: _field(number, 5, struct.pack("<I", n)))
    payload = (_texts if wild else _valid_texts) if kind == "string" else st.one_of(st.binary(max_size=20), st.sampled_from([bytes(8), bytes(16)]))
    return payload.map(lambda b: _len(number, b))


_unknown = st.one_of(
    st.tuples(st.integers(17, 40), _varints).map(lambda t: _field(t[0], 0, _varint(t[1]))),
    st.tuples(st.integers(17, 2**29 - 1), st.binary(max_size=12)).map(lambda t: _len(*t)),
    st.integers(17, 40).map(lambda n: _field(n, 1, bytes(8))),
    st.integers(17, 40).map(lambda n: _field(n, 5, bytes(4))),
)
_plain_unknown = _unknown
_unknown = st.one_of(_plain_unknown, st.integers(17, 40).map(lambda n: _field(n, 3, b"") + _field(n, 4, b"")))  # a group
_junk = st.sampled_from([b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02", b"\x00", b"\x07", b"\x0c"])  # bad tags


REPEATED = {("Request", 1), ("ResourceSpans", 2), ("Resource", 1), ("Resource", 3), ("ScopeSpans", 2),
            ("Scope", 3), ("Span", 9), ("Span", 11), ("Span", 13), ("Event", 3), ("Link", 4), ("ArrayValue", 1),
            ("KeyValueList", 1)}


def _deferred(name: str, depth: int, wild: bool) -> st.SearchStrategy[bytes]:
    return st.deferred(lambda: _message(name, depth, wild))


def _keyed(key: int | None, number: int, payload: bytes) -> tuple[int | None, bytes]:
    return key, _len(number, payload)


def _message(name: str, depth: int, wild: bool) -> st.SearchStrategy[bytes]:
    """A message's fields in any order, repeated ones and scalars possibly several times (the last scalar
    wins), singular messages at most once (twice protobuf merges them: test_it_abstains_where_...), unknown
    fields and known numbers with another wire type (unknown to protobuf). wild: strings may be invalid
    UTF-8 and unknown fields groups (either refuses or abstains on the whole request)."""
    parts = []
    for number, kind in SCHEMA[name].items():
        if isinstance(kind, tuple):
            if depth <= 0:
                continue
            inner = _deferred(kind[1], depth - 1, wild)
            once = None if (name, number) in REPEATED else number  # the unique_by key of a singular message
            parts += [inner.map(functools.partial(_keyed, once, number))] * 3  # nesting is the work
        else:
            parts.append(_scalar(kind, number, wild).map(lambda b: (None, b)))
        other = _scalar("fixed32" if _WIRE.get(kind if isinstance(kind, str) else "bytes") != 5 else "varint", number)
        parts.append(other.map(lambda b: (None, b)))
    parts.append((_unknown if wild else _plain_unknown).map(lambda b: (None, b)))
    unique = iter(range(10**9))
    fields = st.lists(st.one_of(*parts), max_size=6 if depth > 2 else 3,
                      unique_by=lambda part: part[0] if part[0] is not None else -next(unique) - 1)
    return fields.map(lambda ps: b"".join(b for _, b in ps))


REQUESTS = st.one_of(_message("Request", 7, wild=False), _message("Request", 7, wild=True))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(REQUESTS, st.sampled_from([0, 1, CAP, 10**6]))
def test_wire_level_requests_decode_as_upb_does(data, cap):
    check(data, cap)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(REQUESTS, st.data())
def test_truncated_and_corrupted_bytes_never_pass_what_upb_rejects(data, draw):
    if data:
        cut = draw.draw(st.integers(0, len(data)))
        flip = draw.draw(st.integers(0, len(data) - 1))
        check(data[:cut])
        check(data[:flip] + bytes([data[flip] ^ draw.draw(st.integers(1, 255))]) + data[flip + 1:])
        check(data[:cut] + draw.draw(_junk) + data[cut:])


# --- requests built with the real opentelemetry-proto messages: the compiled decoder must not abstain ---

def _any_values(depth: int) -> st.SearchStrategy[AnyValue]:
    leaves = st.one_of(
        st.text(max_size=60).map(lambda s: AnyValue(string_value=s)),
        st.booleans().map(lambda b: AnyValue(bool_value=b)),
        st.integers(-(2**63), 2**63 - 1).map(lambda i: AnyValue(int_value=i)),
        st.floats().map(lambda d: AnyValue(double_value=d)),
        st.binary(max_size=20).map(lambda b: AnyValue(bytes_value=b)),
        st.just(AnyValue()),
    )
    if depth == 0:
        return leaves
    inner = st.deferred(lambda: _any_values(depth - 1))
    return st.one_of(
        leaves,
        st.lists(inner, max_size=4).map(lambda vs: AnyValue(array_value=ArrayValue(values=vs))),
        st.lists(st.tuples(st.text(max_size=8), inner), max_size=4).map(
            lambda kvs: AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs]))),
    )


_keys = st.one_of(st.text(max_size=12), st.sampled_from(["gen_ai.input.messages", "gen_ai.output.messages",
                                                          "gen_ai.system_instructions", "gen_ai.request.model"]))
_kvs = st.lists(st.builds(KeyValue, key=_keys, value=_any_values(3)), max_size=6)
_spans = st.builds(
    Span, trace_id=st.binary(max_size=17), span_id=st.binary(max_size=9), parent_span_id=st.binary(max_size=9),
    trace_state=st.text(max_size=10), name=st.text(max_size=20), kind=st.integers(-(2**31), 2**31 - 1),
    start_time_unix_nano=st.integers(0, 2**64 - 1), end_time_unix_nano=st.integers(0, 2**64 - 1),
    attributes=_kvs, dropped_attributes_count=st.integers(0, 2**32 - 1),
    events=st.lists(st.builds(Span.Event, time_unix_nano=st.integers(0, 2**64 - 1), name=st.text(max_size=8),
                              attributes=_kvs, dropped_attributes_count=st.integers(0, 2**32 - 1)), max_size=2),
    links=st.lists(st.builds(Span.Link, trace_id=st.binary(max_size=16), span_id=st.binary(max_size=8),
                             trace_state=st.text(max_size=8), attributes=_kvs), max_size=2),
    dropped_events_count=st.integers(0, 2**32 - 1), dropped_links_count=st.integers(0, 2**32 - 1),
    status=st.builds(Status, code=st.integers(-(2**31), 2**31 - 1), message=st.text(max_size=10)),
    flags=st.integers(0, 2**32 - 1),
)
_requests = st.builds(ExportTraceServiceRequest, resource_spans=st.lists(st.builds(
    ResourceSpans, resource=st.builds(lambda kvs: ResourceSpans().resource.__class__(attributes=kvs), _kvs),
    scope_spans=st.lists(st.builds(ScopeSpans, spans=st.lists(_spans, max_size=3)), max_size=2)), max_size=2))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_requests, st.sampled_from([0, 5, 10**6]))
def test_serialized_opentelemetry_messages_decode_as_upb_does(request, cap):
    data = request.SerializeToString()
    assert check(data, cap) is not None, "the compiled decoder abstained on a plain serialized request"


@pytest.mark.parametrize("builder", ["export_request", "dialect_request"])
@pytest.mark.parametrize("authenticated", [True, False])
def test_rows_are_byte_identical(builder, authenticated):
    data = getattr(loadgen, builder)(random.Random(5), 40, 1_700_000_000 * 10**9).SerializeToString()
    policy = IngestPolicy(tenant="local", authenticated=authenticated, allow_claimed_tenant=False,
                          max_attribute_chars=200, redaction=ServerRedaction.create("content", "authenticated"))
    compiled = spandata.compiled(data, 200)
    assert compiled is not None
    got, want = flatten(compiled, policy, 1), flatten(spandata.parse(data, 200), policy, 1)
    assert got.accepted == 40
    assert [(k, p.rows) for k, p in got.partitions.items()] == [(k, p.rows) for k, p in want.partitions.items()]
    assert (got.dialects, got.unrecognised, got.reasons) == (want.dialects, want.unrecognised, want.reasons)


def _len(number: int, payload: bytes) -> bytes:
    return _field(number, 2, _varint(len(payload)) + payload)


def _request(span: bytes) -> bytes:
    return _len(1, _len(2, _len(2, span)))


def test_it_abstains_where_protobuf_merges_a_message_sent_twice():
    kv = _len(1, b"k") + _len(2, b"\x18\x05") + _len(2, b"\x10\x01")  # KeyValue.value twice: merged
    data = _request(_len(9, kv))
    assert spandata.compiled(data, CAP) is None
    assert spandata.parse(data, CAP)[0].scopes[0].spans[0].attributes == {"k": True}  # the last case set wins


@pytest.mark.parametrize(("depth", "decided_by"), [(30, "compiled"), (40, "upb"), (60, "upb")])
def test_deep_nesting_is_left_to_upb(depth, decided_by):
    value = _len(1, b"x")
    for _ in range(depth):
        value = _len(5, _len(1, value))  # AnyValue{array_value{values: [value]}}
    data = _request(_len(9, _len(1, b"k") + _len(2, value)))
    assert (spandata.compiled(data, CAP) is not None) == (decided_by == "compiled")
    check(data)


def test_it_abstains_past_the_request_size_limit_as_decoding_counts():
    data = loadgen.export_request(random.Random(1), 10, 1_700_000_000 * 10**9).SerializeToString()
    assert spandata.compiled(data, CAP, 10, 10 * VALUES_PER_SPAN) is not None
    assert spandata.compiled(data, CAP, 9, 10 * VALUES_PER_SPAN) is None
    values = sum(len(r.attributes) + sum(len(s.attributes) + sum(
        sp.attribute_count + sum(1 + len(e.attributes) for e in sp.events) + sum(1 + len(k.attributes) for k in sp.links)
        for sp in s.spans) for s in r.scopes) for r in spandata.parse(data, CAP))
    assert spandata.compiled(data, CAP, 10, values) is not None
    assert spandata.compiled(data, CAP, 10, values - 1) is None


def test_no_leak_on_any_path():
    """Every exit (complete, abstained at each cut point, refused) frees what it built: the interpreter's
    allocated blocks do not grow over repeated decoding."""
    data = loadgen.dialect_request(random.Random(2), 3, 1_700_000_000 * 10**9).SerializeToString()
    inputs = [data] + [data[:cut] for cut in range(0, len(data), 7)] + [data[:n] + b"\xff" + data[n + 1:]
                                                                         for n in range(0, len(data), 11)]

    def run():
        for item in inputs:
            spandata.compiled(item, CAP)
            spandata.compiled(item, CAP, 1, 5)

    run()
    before = sys.getallocatedblocks()
    for _ in range(20):
        run()
    assert sys.getallocatedblocks() - before < 50  # one leaked object per call would be thousands


def test_keys_reused_from_the_previous_span_only_when_their_bytes_match():
    spans = [KeyValue(key=k, value=AnyValue(int_value=i)) for i, k in enumerate(["ab", "ac", "ab", "é", "é", "a", ""])]
    data = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[
        Span(attributes=[kv, KeyValue(key=kv.key + "x")]) for kv in spans])])]).SerializeToString()
    got = check(data)
    assert got is not None
    assert [list(s.attributes) for s in got[0].scopes[0].spans] == [[k, k + "x"] for k in ["ab", "ac", "ab", "é", "é", "a", ""]]


def test_the_cyclic_collector_is_left_as_it_was():
    """The decoder pauses the cyclic collector while it builds (trees only): on every exit it is as before."""
    data = loadgen.export_request(random.Random(3), 2, 1_700_000_000 * 10**9).SerializeToString()
    for item in (data, data[:-3]):  # decoded, abstained
        assert gc.isenabled()
        spandata.compiled(item, CAP)
        assert gc.isenabled()
        gc.disable()
        try:
            spandata.compiled(item, CAP)
            assert not gc.isenabled()
        finally:
            gc.enable()
