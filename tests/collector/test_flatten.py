"""Server-side redaction modes and tenant rules, on the flattening step itself (no server needed)."""

from __future__ import annotations

import json
import random
import time

import pytest

from collector.flatten import IngestPolicy, flatten
from collector.loadgen import export_request
from collector.redaction import ServerRedaction

EMAIL = "carol@example.org"
ADDRESS = "203.0.113.42"  # server.address: a structural key (collector.redaction.STRUCTURAL_KEYS)


def _request():
    request = export_request(random.Random(8), 1, time.time_ns())
    span = request.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.add(key="customer.note").value.string_value = f"write to {EMAIL}"
    span.attributes.add(key="customer.history").value.array_value.values.add().kvlist_value.values.add(
        key="from").value.string_value = EMAIL
    for kv in span.attributes:
        if kv.key == "server.address":
            kv.value.string_value = ADDRESS
    for kv in span.attributes:
        if kv.key == "gen_ai.input.messages":
            kv.value.string_value = json.dumps([{"role": "user", "parts": [{"type": "text", "content": EMAIL}]}])
    event = span.events.add(name="note", time_unix_nano=span.start_time_unix_nano)
    event.attributes.add(key="text").value.string_value = EMAIL
    span.name = f"Reply to {EMAIL}.task"  # OpenLLMetry names a CrewAI task span after the task's text
    return request


def _stored(part) -> dict:
    """The first row as the segment holds it: through the worker's column buffers and Arrow, as the server does."""
    from collector.columns import encode_rows, record_batch

    return record_batch(encode_rows(part.rows)).to_pylist()[0]


def _row(mode: str) -> dict:
    policy = IngestPolicy("__verdict_local__", False, False, 10_000, ServerRedaction.create(mode))
    (part,) = flatten(_request(), policy).partitions.values()
    return _stored(part)


@pytest.mark.parametrize("mode, redacted, structural_redacted", [
    ("content", True, False), ("all", True, True), ("off", False, False)])
def test_redaction_modes(mode, redacted, structural_redacted):
    """`content` redacts every value but the structural allow-list; `all` those too; `off` nothing."""
    row = _row(mode)
    assert (EMAIL not in row["input_messages"]) is redacted
    assert (EMAIL not in row["attributes"]) is redacted  # a free-text attribute and a nested list of maps
    assert (EMAIL not in row["events"]) is redacted
    assert (EMAIL not in row["name"]) is redacted
    assert (ADDRESS not in row["attributes"]) is structural_redacted
    assert row["output_messages"] and row["system_instructions"]  # untouched content survives


def test_unknown_redaction_mode_is_refused():
    with pytest.raises(ValueError, match="redaction mode must be one of"):
        ServerRedaction.create("most")


def _row_with(attributes: dict, mode: str = "off") -> dict:
    """Flatten one span with `attributes` set (string or int values) and convert it to Arrow, as the server does."""
    request = export_request(random.Random(9), 1, time.time_ns())
    span = request.resource_spans[0].scope_spans[0].spans[0]
    for kv in [kv for kv in span.attributes if kv.key in attributes]:
        span.attributes.remove(kv)
    for key, value in attributes.items():
        target = span.attributes.add(key=key).value
        if isinstance(value, int):
            target.int_value = value
        else:
            target.string_value = value
    policy = IngestPolicy("__verdict_local__", False, False, 10_000, ServerRedaction.create(mode))
    (part,) = flatten(request, policy).partitions.values()
    return _stored(part)  # the Arrow step must not raise (it would be a 500 before)


@pytest.mark.parametrize("sent, stored", [
    ("120", 120), ("99999999999999999999999", None), ("²", None), ("٣", None), ("-5", None), (2**63 - 1, 2**63 - 1)])
def test_token_counts_outside_bigint_stay_only_in_attributes(sent, stored):
    row = _row_with({"gen_ai.usage.input_tokens": sent})
    assert row["input_tokens"] == stored
    assert json.loads(row["attributes"])["gen_ai.usage.input_tokens"] == sent  # nothing dropped


@pytest.mark.parametrize("key, reason", [
    ("bob@example.com", "e-mail address"),
    ("has space", "invalid intent key"),
    ("x" * 65, "the limit is 64"),
    ("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "changed by redaction"),
])
def test_invalid_intent_key_is_null_with_reason_and_kept_in_attributes(key, reason):
    row = _row_with({"verdict.intent_key": key})
    assert row["intent_key"] is None
    assert reason in row["intent_key_error"]
    assert "bob@example.com" not in row["intent_key_error"]  # the reason does not repeat personal data
    assert json.loads(row["attributes"])["verdict.intent_key"] == key


def test_valid_or_absent_intent_key():
    row = _row_with({"verdict.intent_key": "billing.refund"})
    assert (row["intent_key"], row["intent_key_error"]) == ("billing.refund", None)
    row = _row_with({"verdict.intent_key": 7})
    assert (row["intent_key"], row["intent_key_error"]) == (None, "intent key must be a string, got int")


def test_the_sdk_s_content_omitted_mark_is_its_own_column_and_stays_in_attributes():
    # The daemon's sampler reads the narrow column, never `attributes` (docs/daemon.md).
    row = _row_with({"verdict.content_omitted": "export_backlog"}, "content")
    assert row["content_omitted"] == "export_backlog"
    assert json.loads(row["attributes"])["verdict.content_omitted"] == "export_backlog"
    assert _row_with({}, "content")["content_omitted"] is None
    odd = _row_with({"verdict.content_omitted": f"shed, ask {EMAIL}"}, "content")["content_omitted"]
    assert odd and EMAIL not in odd  # not token-shaped: redacted like any copied attribute


def _content_row(authenticated: bool, claim: str | None, trust: str) -> dict:
    """One span with an e-mail in its input messages, from a scope that claims SDK redaction `claim`."""
    from collector.redaction import SDK_REDACTION_ATTRIBUTE

    request = _request()
    scope = request.resource_spans[0].scope_spans[0].scope
    del scope.attributes[:]
    if claim is not None:
        scope.attributes.add(key=SDK_REDACTION_ATTRIBUTE).value.string_value = claim
    policy = IngestPolicy("acme", authenticated, False, 10_000, ServerRedaction.create("content", trust))
    (part,) = flatten(request, policy).partitions.values()
    return _stored(part)


@pytest.mark.parametrize("authenticated, claim, trust, redacted", [
    (True, "current", "authenticated", False),  # the SDK redacted, the token vouches for the sender
    (True, None, "authenticated", True),  # another exporter (no claim): defence in depth
    (True, "0.0.1", "authenticated", True),  # an SDK with another engine version
    (False, "current", "authenticated", True),  # anyone can claim without a token
    (True, "current", "never", True),  # trust switched off
])
def test_sdk_redaction_is_trusted_only_when_authenticated_and_version_matched(authenticated, claim, trust, redacted):
    from collector.redaction import redaction_version

    row = _content_row(authenticated, redaction_version() if claim == "current" else claim, trust)
    assert (EMAIL not in row["input_messages"]) is redacted
    assert EMAIL not in row["attributes"]  # the claim covers only the SDK's own message attributes


def test_unknown_trust_mode_is_refused():
    with pytest.raises(ValueError, match="SDK redaction trust must be one of"):
        ServerRedaction.create("content", "sometimes")


def test_credential_named_attributes_and_refused_intent_keys_are_redacted():
    request = export_request(random.Random(10), 1, time.time_ns())
    span = request.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.add(key="db.password").value.string_value = "hunter2"
    for kv in span.attributes:
        if kv.key == "verdict.intent_key":
            kv.value.string_value = "+14155550134"  # token-shaped, refused (redaction rewrites it)
    policy = IngestPolicy("__verdict_local__", False, False, 10_000, ServerRedaction.create("content"))
    (part,) = flatten(request, policy).partitions.values()
    attributes = json.loads(_stored(part)["attributes"])
    assert attributes["db.password"] == "<SECRET>"
    assert attributes["verdict.intent_key"] == "<PHONE>"
