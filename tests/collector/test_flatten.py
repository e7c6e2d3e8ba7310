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


def _request():
    request = export_request(random.Random(8), 1, time.time_ns())
    span = request.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.add(key="customer.note").value.string_value = f"write to {EMAIL}"
    for kv in span.attributes:
        if kv.key == "gen_ai.input.messages":
            kv.value.string_value = json.dumps([{"role": "user", "parts": [{"type": "text", "content": EMAIL}]}])
    event = span.events.add(name="note", time_unix_nano=span.start_time_unix_nano)
    event.attributes.add(key="text").value.string_value = EMAIL
    return request


def _row(mode: str) -> dict:
    from collector.schema import COLUMN_NAMES

    policy = IngestPolicy("__verdict_local__", False, False, 10_000, ServerRedaction.create(mode))
    (part,) = flatten(_request(), policy).partitions.values()
    return dict(zip(COLUMN_NAMES, part.rows[0], strict=True))


@pytest.mark.parametrize("mode, content_redacted, others_redacted", [
    ("content", True, False), ("all", True, True), ("off", False, False)])
def test_redaction_modes(mode, content_redacted, others_redacted):
    row = _row(mode)
    assert (EMAIL not in row["input_messages"]) is content_redacted
    assert (EMAIL not in row["attributes"]) is others_redacted
    assert (EMAIL not in row["events"]) is others_redacted
    assert row["output_messages"] and row["system_instructions"]  # untouched content survives


def test_unknown_redaction_mode_is_refused():
    with pytest.raises(ValueError, match="redaction mode must be one of"):
        ServerRedaction.create("most")
