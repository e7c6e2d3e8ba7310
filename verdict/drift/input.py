"""Reading the judgment columns and encoding them for grouping with numpy.

Input is columnar (a pyarrow Table or RecordBatch, a DuckDB relation, or a mapping of column name
to numpy array) with one row per judgment:

    started_at   trace start (timestamp; naive values are UTC)
    trace_id     string, used only to quote examples
    cluster      string
    dimension    string
    value        "PASS" | "FAIL" | "UNCLEAR" | "ERROR"  (or a float column of scores)
    fingerprint  evaluator fingerprint (string); different fingerprints are never pooled
    score        optional float; rows whose value is null carry a continuous score here

Rows are grouped with numpy (codes from Arrow dictionary encoding, cell codes made dense by
`dense_codes`, one bincount), never with a Python loop over rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from verdict.drift.model import DriftInputError
from verdict.drift.windows import Layout

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

REQUIRED_COLUMNS = ("started_at", "trace_id", "cluster", "dimension", "value", "fingerprint")
# Value codes; counts are kept per code and window.
PASS, FAIL, UNCLEAR, ERROR, SCORE = range(5)
_VERDICTS = {"PASS": PASS, "FAIL": FAIL, "UNCLEAR": UNCLEAR, "ERROR": ERROR}
BASELINE, CURRENT, REFERENCE = 0, 1, 2


@dataclass(frozen=True)
class Judgments:
    """The judgments inside the windows of a run, one array entry per windowed row, grouped into cells.

    A cell is one (fingerprint, cluster, dimension); cells are numbered in the order of their codes.
    """

    table: pa.Table
    rows: np.ndarray  # the table row of each windowed row
    ts: np.ndarray  # started_at, microseconds since the epoch
    window: np.ndarray  # BASELINE, CURRENT or REFERENCE
    values: np.ndarray  # value code, PASS ... SCORE
    scores: np.ndarray  # the score where the value code is SCORE, else NaN
    cell: np.ndarray  # the row's cell
    labels: list[tuple[str, str, str]]  # (fingerprint, cluster, dimension) per cell
    counts: np.ndarray  # judgments per [cell, window, value code]
    scored: np.ndarray  # per cell: it holds scores (continuous), not verdicts
    seasonal: np.ndarray  # per cell: its baseline is the same-weekday windows (and it has no reference)
    small: np.ndarray  # per cell: tested over the small-cell windows (too few judgments in the current one)


@dataclass(frozen=True)
class History:
    """Every judgment a run may look at (from `layout.earliest` to `now`), encoded, before the windows of
    each cell are chosen: `windowed` does that once the seasonal cells are known."""

    table: pa.Table
    layout: Layout
    rows: np.ndarray
    ts: np.ndarray
    values: np.ndarray
    scores: np.ndarray
    cell: np.ndarray
    labels: list[tuple[str, str, str]]

    def counts(self, window: np.ndarray) -> np.ndarray:
        """Judgments per [cell, value code] among the rows where `window` holds."""
        import numpy as np

        n = len(self.labels)
        return np.bincount(self.cell[window] * 5 + self.values[window], minlength=n * 5).reshape(n, 5)

    def windowed(self, seasonal: np.ndarray, small: np.ndarray) -> Judgments:
        """The rows of the run's windows: a seasonal cell's baseline is its same-weekday windows, any
        other cell's the recent baseline, with the reference beside it; a `small` cell (not seasonal) is
        compared over the layout's small-cell windows alone."""
        import numpy as np

        ts, lay = self.ts, self.layout
        per_row, small_row = seasonal[self.cell], small[self.cell]
        window = np.full(ts.size, -1, dtype=np.int8)
        window[lay.reference(ts) & ~per_row] = REFERENCE
        window[np.where(per_row, lay.seasonal(ts), lay.recent(ts))] = BASELINE
        window[lay.current(ts)] = CURRENT
        if small.any():
            window[small_row] = -1
            window[small_row & lay.small_baseline(ts)] = BASELINE
            window[small_row & lay.small_current(ts)] = CURRENT
        keep = np.flatnonzero(window >= 0)
        cells, cell = dense_codes(self.cell[keep], len(self.labels))
        win, values = window[keep], self.values[keep]
        counts = np.bincount(cell * 15 + win * 5 + values, minlength=cells.size * 15).reshape(cells.size, 3, 5)
        labels = [self.labels[c] for c in cells.tolist()]
        return Judgments(table=self.table, rows=self.rows[keep], ts=ts[keep], window=win, values=values,
                         scores=self.scores[keep], cell=cell, labels=labels, counts=counts,
                         scored=_scored(counts, labels), seasonal=seasonal[cells], small=small[cells])


def read_judgments(judgments: Any, layout: Layout) -> History:
    """The judgments whose start lies in [layout.earliest, layout.now), encoded; DriftInputError on bad
    columns."""
    import numpy as np

    table = _as_table(judgments)
    ts = _timestamps_us(table.column("started_at"))
    rows = np.flatnonzero((ts >= layout.earliest) & (ts < layout.now))
    fp_codes, fp_names = _codes(table, "fingerprint", rows)
    cl_codes, cl_names = _codes(table, "cluster", rows)
    dim_codes, dim_names = _codes(table, "dimension", rows)
    values, scores = _values(table, rows)
    cell_code = (fp_codes.astype(np.int64) * len(cl_names) + cl_codes) * len(dim_names) + dim_codes
    keys, cell = dense_codes(cell_code, len(fp_names) * len(cl_names) * len(dim_names))
    return History(table=table, layout=layout, rows=rows, ts=ts[rows], values=values, scores=scores, cell=cell,
                   labels=_cell_labels(keys, fp_names, cl_names, dim_names))


def dense_codes(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(codes, return_inverse=True)` for non-negative codes below `size`: the codes present, in
    order, and each code's index among them. By a presence table instead of a sort when `size` is within a
    few times the number of codes (a drift run's cell codes always are): the sort was a third of a run."""
    import numpy as np

    if size > 4 * codes.size + 4096:
        return np.unique(codes, return_inverse=True)
    present = np.zeros(size, dtype=np.bool_)
    present[codes] = True
    keys = np.flatnonzero(present)
    index = np.cumsum(present, dtype=np.int64) - 1
    return keys, index[codes]


def us(t: datetime) -> int:
    """Microseconds since the epoch."""
    return int((t - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1))


def _as_table(judgments: Any) -> pa.Table:
    import numpy as np
    import pyarrow as pa

    if isinstance(judgments, pa.RecordBatch):
        table = pa.Table.from_batches([judgments])
    elif isinstance(judgments, pa.Table):
        table = judgments
    elif hasattr(judgments, "to_arrow_table"):  # DuckDB relation
        table = judgments.to_arrow_table()
    elif isinstance(judgments, Mapping):
        try:
            table = pa.table({k: pa.array(np.asarray(v)) for k, v in judgments.items()})
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise DriftInputError(f"judgment columns could not be read: {exc}") from None
    else:
        raise DriftInputError(
            f"judgments must be a pyarrow Table/RecordBatch, a DuckDB relation or a mapping of columns, "
            f"got {type(judgments).__name__}"
        )
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise DriftInputError(
            f"judgments lack column(s) {missing}; required: {list(REQUIRED_COLUMNS)}"
        )
    return table


def _timestamps_us(column: pa.ChunkedArray) -> np.ndarray:
    import pyarrow as pa

    if not pa.types.is_timestamp(column.type):
        raise DriftInputError(f"started_at must be a timestamp column, got {column.type}")
    if column.null_count:
        raise DriftInputError(f"started_at has {column.null_count} null value(s)")
    as_us = column.cast(pa.timestamp("us", tz=column.type.tz)).combine_chunks()
    return as_us.view(pa.int64()).to_numpy()


def _codes(table: pa.Table, name: str, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Dictionary codes of a string column at `rows`, with the code -> string list."""
    import numpy as np

    column = table.column(name)
    if column.null_count:
        raise DriftInputError(f"{name} has {column.null_count} null value(s)")
    encoded = _dictionary(column)
    if encoded is None:
        raise DriftInputError(f"{name} must be a string column, got {column.type}")
    names = cast(list[str], encoded.dictionary.to_pylist())  # a string dictionary, nulls refused above
    codes = encoded.indices.to_numpy(zero_copy_only=False)[rows]
    if len(set(names)) != len(names):  # a dictionary may repeat values; merge their codes
        first = {v: i for i, v in reversed(list(enumerate(names)))}
        codes = np.array([first[v] for v in names])[codes]
    return codes, names


def _dictionary(column: pa.ChunkedArray) -> pa.DictionaryArray | None:
    """The column as one dictionary-encoded array, or None if it does not hold strings."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        if not (
            pa.types.is_string(column.type.value_type)
            or pa.types.is_large_string(column.type.value_type)
        ):
            return None
        return cast(  # a dictionary column's chunks are DictionaryArrays, and so is their combination
            pa.DictionaryArray,
            column.unify_dictionaries().combine_chunks() if column.num_chunks != 1 else column.chunk(0),
        )
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column.combine_chunks().dictionary_encode()
    return None


def _values(table: pa.Table, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value code per row (PASS/FAIL/UNCLEAR/ERROR/SCORE) and the score (NaN unless SCORE)."""
    import numpy as np
    import pyarrow as pa

    value = table.column("value")
    score_col = table.column("score").combine_chunks() if "score" in table.column_names else None
    enc = _dictionary(value)
    if pa.types.is_floating(value.type) or pa.types.is_integer(value.type):
        if score_col is not None:
            raise DriftInputError(
                "give scores either as a numeric value column or as a score column, not both"
            )
        score_col, codes = value.combine_chunks(), np.full(len(rows), -1, dtype=np.int64)
    elif enc is not None:
        names = [str(v).upper() for v in enc.dictionary.to_pylist()]
        unknown = sorted({n for n in names if n not in _VERDICTS})
        if unknown:
            raise DriftInputError(
                f"value holds unknown verdict(s) {unknown}; expected PASS, FAIL, UNCLEAR or ERROR"
            )
        lookup = np.array([_VERDICTS[n] for n in names] + [-1], dtype=np.int64)
        idx = enc.indices.fill_null(len(names)).to_numpy(zero_copy_only=False)
        codes = lookup[idx[rows]]
    else:
        raise DriftInputError(
            f"value must be a string verdict or a numeric score column, got {value.type}"
        )
    scores = np.full(len(rows), np.nan)
    if score_col is not None:
        if not (pa.types.is_floating(score_col.type) or pa.types.is_integer(score_col.type)):
            raise DriftInputError(f"score must be numeric, got {score_col.type}")
        scores = score_col.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)[rows]
    # A row without a verdict is a score; a missing or non-finite score is an ERROR judgment.
    no_verdict = codes < 0
    codes[no_verdict] = np.where(np.isfinite(scores[no_verdict]), SCORE, ERROR)
    scores[codes != SCORE] = np.nan
    return codes, scores


def _cell_labels(
    keys: np.ndarray, fp_names: list[str], cl_names: list[str], dim_names: list[str]
) -> list[tuple[str, str, str]]:
    n_cl, n_dim = len(cl_names), len(dim_names)
    return [
        (fp_names[k // (n_cl * n_dim)], cl_names[(k // n_dim) % n_cl], dim_names[k % n_dim])
        for k in keys.tolist()
    ]


def _scored(counts: np.ndarray, labels: list[tuple[str, str, str]]) -> np.ndarray:
    """Per cell: does it hold scores? A cell holding both scores and PASS/FAIL verdicts is refused."""
    import numpy as np

    scored: np.ndarray = counts[:, :, SCORE].sum(axis=1) > 0
    mixed = scored & (counts[:, :, [PASS, FAIL]].sum(axis=(1, 2)) > 0)
    if mixed.any():
        fp, cl, dim = labels[int(np.argmax(mixed))]
        raise DriftInputError(
            f"dimension {dim!r} of cluster {cl!r} (fingerprint {fp[:12]}) mixes PASS/FAIL verdicts and scores"
        )
    return scored
