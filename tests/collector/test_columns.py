"""The workers' Arrow column buffers (collector.columns) equal what pyarrow builds from the same rows."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collector.columns import encode_rows, record_batch
from collector.schema import arrow_schema
from verdict.semconv import SPAN_COLUMNS

_text = st.text(max_size=12)  # includes multi-byte characters and the empty string
_values = {
    "string": st.none() | _text | _text.map(str.encode),  # flatten's JSON columns are UTF-8 bytes
    "int64": st.none() | st.integers(-(2**63), 2**63 - 1),
    "timestamp_ns": st.none() | st.integers(0, 2**63 - 1),
    "string_list": st.none() | st.lists(_text, max_size=3),
}
_rows = st.lists(st.tuples(*(_values[c.arrow_type] for c in SPAN_COLUMNS)), max_size=40)


def _reference(rows: list[tuple]):
    """pyarrow's own conversion of the same Python values: the independent reference."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(SPAN_COLUMNS)
    arrays = []
    for col, field in zip(columns, arrow_schema(), strict=True):
        text = [v.decode() if isinstance(v, bytes) else v for v in col]
        arrays.append(pa.array(text, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema())


@settings(max_examples=200, deadline=None)
@given(_rows)
def test_buffers_equal_pyarrows_conversion(rows):
    batch = record_batch(encode_rows(rows))
    assert batch.equals(_reference(rows))
    assert batch.to_pylist() == _reference(rows).to_pylist()


@pytest.mark.parametrize("values", [
    ["a", "b", "c"], [b"{}", b'{"k":"\xc3\xa9"}'], ["é", None, "x"], [None, None], ["a", b"b", None], [""] * 3])
def test_string_columns_of_each_shape(values):
    rows = [tuple(v if c.name == "name" else None for c in SPAN_COLUMNS) for v in values]
    got = record_batch(encode_rows(rows)).column("name").to_pylist()
    assert got == [v.decode() if isinstance(v, bytes) else v for v in values]


def test_invalid_utf8_is_refused_not_stored():
    rows = [tuple(b"\xff" if c.name == "attributes" else None for c in SPAN_COLUMNS)]
    with pytest.raises(pa.ArrowInvalid):
        record_batch(encode_rows(rows))
