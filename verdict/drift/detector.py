"""Drift detection: has a (cluster, dimension) got worse in the last day than in the week before?

Input is columnar (a pyarrow Table or RecordBatch, a DuckDB relation, or a mapping of column name
to numpy array) with one row per judgment:

    started_at   trace start (timestamp; naive values are UTC)
    trace_id     string, used only to quote examples
    cluster      string
    dimension    string
    value        "PASS" | "FAIL" | "UNCLEAR" | "ERROR"  (or a float column of scores)
    fingerprint  evaluator fingerprint (string); different fingerprints are never pooled
    score        optional float; rows whose value is null carry a continuous score here

Rows are grouped with numpy (codes from Arrow dictionary encoding, one np.unique over cell
codes, one bincount), never with a Python loop over rows. See docs/statistics.md for every
status and gate.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

REQUIRED_COLUMNS = ("started_at", "trace_id", "cluster", "dimension", "value", "fingerprint")
# Value codes used internally; counts are kept per code and window.
_PASS, _FAIL, _UNCLEAR, _ERROR, _SCORE = range(5)
_VERDICTS = {"PASS": _PASS, "FAIL": _FAIL, "UNCLEAR": _UNCLEAR, "ERROR": _ERROR}
_BASELINE, _CURRENT = 0, 1


class DriftInputError(ValueError):
    """The judgments cannot be analysed as given; the message says which column and why."""


class MetricKind(enum.StrEnum):
    BINARY = "binary"  # PASS/FAIL verdicts, Fisher's exact test
    CONTINUOUS = "continuous"  # scores, Mann-Whitney U


class CellStatus(enum.StrEnum):
    INSUFFICIENT = "insufficient"  # fewer than min_usable usable judgments in a window: not tested
    STABLE = "stable"  # tested; adjusted p above the quality level
    BELOW_GATE = "below_gate"  # significant, but the change is under the cell's effect gate
    REGRESSION = "regression"  # signal: significant, |change| >= gate, current worse
    IMPROVEMENT = "improvement"  # signal: significant, |change| >= gate, current better


class CoverageStatus(enum.StrEnum):
    INSUFFICIENT = "insufficient"  # fewer than min_usable judgments (any outcome) in a window
    STABLE = "stable"
    COVERAGE_DROP = "coverage_drop"  # signal: UNCLEAR/ERROR share rose significantly and sharply


@dataclass(frozen=True)
class WindowCounts:
    passed: int
    failed: int
    unclear: int
    error: int
    scored: int
    level: float | None  # pass rate (binary) or mean score (continuous); None without usable rows

    @property
    def usable(self) -> int:
        return self.passed + self.failed + self.scored

    @property
    def total(self) -> int:
        return self.usable + self.unclear + self.error

    @property
    def unusable_share(self) -> float | None:
        return (self.unclear + self.error) / self.total if self.total else None


@dataclass(frozen=True)
class Coverage:
    """Separate test of the UNCLEAR/ERROR share (Fisher on usable vs unusable counts)."""

    status: CoverageStatus
    rise: float | None  # current unusable share minus baseline unusable share
    p_value: float | None
    adjusted_p: float | None
    examples: tuple[str, ...]  # UNCLEAR/ERROR trace ids from the current window, when a signal


@dataclass(frozen=True)
class DriftCell:
    fingerprint: str
    cluster: str
    dimension: str
    kind: MetricKind
    status: CellStatus
    baseline: WindowCounts
    current: WindowCounts
    p_value: float | None  # None when not tested
    adjusted_p: float | None  # the run's correction over every tested cell of the run
    delta: float | None  # Cliff's delta of current over baseline (pass-rate difference on binary)
    delta_low: float | None
    delta_high: float | None
    gate: float  # smallest |delta| that is a signal: pass-rate points (binary) or Cliff's delta
    mde: float | None  # smallest |delta| detectable at these sizes at the quality level; None without data
    mde_adjusted: float | None  # the same at the run's multiplicity-adjusted level quality_alpha/m
    coverage: Coverage
    examples: tuple[str, ...]  # up to max_examples trace ids from the current window, when a signal

    @property
    def is_signal(self) -> bool:
        return self.status in (CellStatus.REGRESSION, CellStatus.IMPROVEMENT)


@dataclass(frozen=True)
class DriftReport:
    now: datetime
    current_start: datetime
    baseline_start: datetime
    baseline_end: datetime
    alpha: float  # P(the run raises any false signal, quality or coverage) <= alpha
    coverage_alpha_share: float
    pass_rate_gate: float
    delta_gate: float
    correction: str
    min_usable: int
    cells: tuple[DriftCell, ...]  # every (fingerprint, cluster, dimension) seen in either window

    @property
    def quality_alpha(self) -> float:
        """The level of the quality family (pass rates, scores)."""
        return self.alpha * (1 - self.coverage_alpha_share)

    @property
    def coverage_alpha(self) -> float:
        """The level of the coverage family (UNCLEAR/ERROR shares)."""
        return self.alpha * self.coverage_alpha_share

    @property
    def signals(self) -> tuple[DriftCell, ...]:
        return tuple(c for c in self.cells if c.is_signal)

    @property
    def coverage_signals(self) -> tuple[DriftCell, ...]:
        return tuple(c for c in self.cells if c.coverage.status is CoverageStatus.COVERAGE_DROP)

    @property
    def tested(self) -> int:
        return sum(c.p_value is not None for c in self.cells)

    def by_fingerprint(self) -> dict[str, tuple[DriftCell, ...]]:
        out: dict[str, list[DriftCell]] = {}
        for c in self.cells:
            out.setdefault(c.fingerprint, []).append(c)
        return {k: tuple(v) for k, v in out.items()}

    def cell(self, fingerprint: str, cluster: str, dimension: str) -> DriftCell:
        for c in self.cells:
            if (c.fingerprint, c.cluster, c.dimension) == (fingerprint, cluster, dimension):
                return c
        raise KeyError(
            f"no cell for fingerprint={fingerprint!r} cluster={cluster!r} dimension={dimension!r}"
        )


class DriftDetector:
    """Compares the current window with a baseline window per (fingerprint, cluster, dimension).

    Defaults: current = the 24 h before `now`; baseline = the 7 days ending 24 h before the current
    window starts. A cell is tested when both windows hold at least `min_usable` usable judgments.
    `alpha` bounds the probability that a run on unchanged data raises any signal, quality or coverage:
    the quality tests form one family at `(1 - coverage_alpha_share)·alpha`, the coverage tests another
    at `coverage_alpha_share·alpha` (union bound). A quality signal needs adjusted p <= its family's level
    (`correction` over every tested cell: "bh", "holm" or "bonferroni") and a change of at least the cell's gate, judged on the point estimate: a pass-rate
    difference of `pass_rate_gate` (a share: 0.05 = 5 percentage points) on PASS/FAIL dimensions, a
    |Cliff's delta| of `delta_gate` on scored ones; `dimension_gates` overrides either per dimension.
    """

    def __init__(
        self,
        *,
        current_window: timedelta = timedelta(hours=24),
        baseline_window: timedelta = timedelta(days=7),
        gap: timedelta = timedelta(hours=24),
        min_usable: int = 30,
        alpha: float = 0.05,
        coverage_alpha_share: float = 0.1,
        pass_rate_gate: float = 0.05,
        delta_gate: float = 0.147,
        dimension_gates: Mapping[str, float] | None = None,
        correction: str = "bh",
        power: float = 0.8,
        coverage_min_rise: float = 0.10,
        max_examples: int = 5,
    ) -> None:
        if current_window <= timedelta(0) or baseline_window <= timedelta(0):
            raise ValueError("current_window and baseline_window must be positive")
        if gap < timedelta(0):
            raise ValueError("gap must not be negative")
        if min_usable < 2:
            raise ValueError(f"min_usable must be at least 2, got {min_usable}")
        for name, v in (("alpha", alpha), ("power", power)):
            if not 0 < v < 1:
                raise ValueError(f"{name} must lie in (0, 1), got {v}")
        if not 0 <= coverage_alpha_share < 1:
            raise ValueError(f"coverage_alpha_share must lie in [0, 1), got {coverage_alpha_share}")
        gates = dict(dimension_gates or {})
        for name, v in (("pass_rate_gate", pass_rate_gate), ("delta_gate", delta_gate),
                        ("coverage_min_rise", coverage_min_rise),
                        *((f"dimension_gates[{k!r}]", g) for k, g in gates.items())):
            if not 0 <= v <= 1:
                raise ValueError(f"{name} must lie in [0, 1], got {v}")
        from verdict.stats.multiple_testing import CORRECTIONS

        if correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {list(CORRECTIONS)}, got {correction!r}")
        if max_examples < 0:
            raise ValueError(f"max_examples must be >= 0, got {max_examples}")
        self.current_window = current_window
        self.baseline_window = baseline_window
        self.gap = gap
        self.min_usable = min_usable
        self.alpha = alpha
        self.coverage_alpha_share = coverage_alpha_share
        self.pass_rate_gate = pass_rate_gate
        self.delta_gate = delta_gate
        self.dimension_gates = gates
        self.correction = correction
        self.power = power
        self.coverage_min_rise = coverage_min_rise
        self.max_examples = max_examples

    def detect(self, judgments: Any, *, now: datetime | None = None) -> DriftReport:
        import numpy as np

        at = _utc(now or datetime.now(UTC))
        current_start = at - self.current_window
        baseline_end = current_start - self.gap
        baseline_start = baseline_end - self.baseline_window
        table = _as_table(judgments)
        ts = _timestamps_us(table.column("started_at"))
        window = np.full(ts.size, -1, dtype=np.int8)
        window[(ts >= _us(baseline_start)) & (ts < _us(baseline_end))] = _BASELINE
        window[(ts >= _us(current_start)) & (ts < _us(at))] = _CURRENT
        rows = np.flatnonzero(window >= 0)
        fp_codes, fp_names = _codes(table, "fingerprint", rows)
        cl_codes, cl_names = _codes(table, "cluster", rows)
        dim_codes, dim_names = _codes(table, "dimension", rows)
        values, scores = _values(table, rows)
        win = window[rows]

        cell_code = (fp_codes.astype(np.int64) * len(cl_names) + cl_codes) * len(
            dim_names
        ) + dim_codes
        keys, cell_of_row = np.unique(cell_code, return_inverse=True)
        n_cells = keys.size
        counts = np.bincount(cell_of_row * 10 + win * 5 + values, minlength=n_cells * 10).reshape(
            n_cells, 2, 5
        )
        scored = counts[:, :, _SCORE].sum(axis=1) > 0
        mixed = scored & (counts[:, :, [_PASS, _FAIL]].sum(axis=(1, 2)) > 0)
        labels = _cell_labels(keys, fp_names, cl_names, dim_names)
        if mixed.any():
            fp, cl, dim = labels[int(np.argmax(mixed))]
            raise DriftInputError(
                f"dimension {dim!r} of cluster {cl!r} (fingerprint {fp[:12]}) mixes PASS/FAIL verdicts and scores"
            )
        gates = np.array([self.dimension_gates.get(dim, self.delta_gate if s else self.pass_rate_gate)
                          for (_, _, dim), s in zip(labels, scored.tolist(), strict=True)])
        analysis = _Analysis(self, counts, scored, gates, cell_of_row, win, values, scores)
        examples = _Examples(
            self.max_examples, table, rows, cell_of_row, win, values, scores, ts[rows]
        )
        cells = tuple(
            analysis.cell(i, labels[i], examples)
            for i in sorted(range(n_cells), key=lambda i: labels[i])
        )
        return DriftReport(
            now=at,
            current_start=current_start,
            baseline_start=baseline_start,
            baseline_end=baseline_end,
            alpha=self.alpha,
            coverage_alpha_share=self.coverage_alpha_share,
            pass_rate_gate=self.pass_rate_gate,
            delta_gate=self.delta_gate,
            correction=self.correction,
            min_usable=self.min_usable,
            cells=cells,
        )


class _Analysis:
    """All per-cell statistics of one run, computed vectorised before cells are materialised."""

    def __init__(
        self,
        det: DriftDetector,
        counts: np.ndarray,  # [cell, window, value code]
        scored: np.ndarray,  # [cell]: continuous?
        gates: np.ndarray,  # [cell]: effect gate in the cell's unit
        cell_of_row: np.ndarray,  # per windowed row
        win: np.ndarray,
        values: np.ndarray,
        scores: np.ndarray,
    ) -> None:
        import numpy as np

        from verdict.stats.cliffs_delta import binary_delta, cliffs_delta
        from verdict.stats.fisher import fisher_exact_many
        from verdict.stats.mann_whitney import mann_whitney_u
        from verdict.stats.multiple_testing import adjust
        from verdict.stats.power import minimum_detectable_delta, minimum_detectable_drop

        self.det = det
        # The run's alpha split between two families, so that any signal of either kind stays within alpha.
        self.quality_alpha = det.alpha * (1 - det.coverage_alpha_share)
        self.coverage_alpha = det.alpha * det.coverage_alpha_share
        self.counts = counts
        self.scored = scored
        self.gates = gates
        n = counts.shape[0]
        usable = counts[:, :, [_PASS, _FAIL, _SCORE]].sum(axis=2)  # [cell, window]
        total = counts.sum(axis=2)
        self.tested = (usable >= det.min_usable).all(axis=1)
        self.p = np.full(n, np.nan)
        self.delta = np.full(n, np.nan)
        self.low = np.full(n, np.nan)
        self.high = np.full(n, np.nan)
        self.mde = np.full(n, np.nan)
        self.mde_adjusted = np.full(n, np.nan)
        self.level = np.full((n, 2), np.nan)
        passed = counts[:, :, _PASS]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.level[~scored] = (passed / usable)[~scored]

        binary = self.tested & ~scored
        if binary.any():
            b = np.flatnonzero(binary)
            cur_pass, cur_n = passed[b, _CURRENT], usable[b, _CURRENT]
            base_pass, base_n = passed[b, _BASELINE], usable[b, _BASELINE]
            self.p[b] = fisher_exact_many(
                cur_pass, cur_n - cur_pass, base_pass, base_n - base_pass
            ).p_value
            self.delta[b], self.low[b], self.high[b] = binary_delta(
                cur_pass, cur_n, base_pass, base_n
            )

        if scored.any():
            samples = _score_samples(cell_of_row, win, values, scores, np.flatnonzero(scored))
            for c, (base, cur) in samples.items():
                self.level[c] = [
                    base.mean() if base.size else np.nan,
                    cur.mean() if cur.size else np.nan,
                ]
                if not self.tested[c]:
                    continue
                self.p[c] = mann_whitney_u(cur, base).p_value
                cd = cliffs_delta(cur, base)
                self.delta[c], self.low[c], self.high[c] = cd.delta, cd.low, cd.high

        # MDE wherever both windows have data, tested or not: it tells an `insufficient` cell how
        # far it is from seeing anything, and a tested one whether the gate or the data decides.
        # The adjusted MDE uses quality_alpha/m, the level a lone change must reach under BH, Holm or
        # Bonferroni in a family of m tested cells.
        sized = (usable > 0).all(axis=1)
        base_n, cur_n = usable[:, _BASELINE], usable[:, _CURRENT]
        b = np.flatnonzero(sized & ~scored)
        scored_cells = np.flatnonzero(sized & scored)
        family = max(int(self.tested.sum()), 1)
        for out, level in ((self.mde, self.quality_alpha), (self.mde_adjusted, self.quality_alpha / family)):
            out[b] = minimum_detectable_drop(
                passed[b, _BASELINE] / base_n[b], base_n[b], cur_n[b], alpha=level, power=det.power
            )
            out[scored_cells] = minimum_detectable_delta(
                base_n[scored_cells], cur_n[scored_cells], alpha=level, power=det.power
            )

        # One family over every tested cell of the run, whatever its fingerprint or kind.
        self.adjusted = np.full(n, np.nan)
        tested = np.flatnonzero(self.tested)
        if tested.size:
            self.adjusted[tested] = adjust(
                self.p[tested], method=det.correction, alpha=self.quality_alpha
            ).adjusted

        # Coverage: Fisher on (unusable, usable) x (current, baseline), its own family at coverage_alpha.
        unusable = total - usable
        self.cov_tested = (total >= det.min_usable).all(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.rise = (
                unusable[:, _CURRENT] / total[:, _CURRENT]
                - unusable[:, _BASELINE] / total[:, _BASELINE]
            )
        self.cov_p = np.full(n, np.nan)
        self.cov_adjusted = np.full(n, np.nan)
        ct = np.flatnonzero(self.cov_tested)
        if ct.size:
            self.cov_p[ct] = fisher_exact_many(
                unusable[ct, _CURRENT],
                usable[ct, _CURRENT],
                unusable[ct, _BASELINE],
                usable[ct, _BASELINE],
            ).p_value
            self.cov_adjusted[ct] = adjust(
                self.cov_p[ct], method=det.correction, alpha=det.alpha
            ).adjusted  # only the adjusted p is used: compared below with coverage_alpha

    def status(self, i: int) -> CellStatus:
        if not self.tested[i]:
            return CellStatus.INSUFFICIENT
        if self.adjusted[i] > self.quality_alpha:
            return CellStatus.STABLE
        if abs(self.delta[i]) < self.gates[i]:
            return CellStatus.BELOW_GATE
        return CellStatus.REGRESSION if self.delta[i] < 0 else CellStatus.IMPROVEMENT

    def coverage_status(self, i: int) -> CoverageStatus:
        if not self.cov_tested[i]:
            return CoverageStatus.INSUFFICIENT
        if (self.coverage_alpha > 0 and self.cov_adjusted[i] <= self.coverage_alpha
                and self.rise[i] >= self.det.coverage_min_rise):
            return CoverageStatus.COVERAGE_DROP
        return CoverageStatus.STABLE

    def cell(self, i: int, label: tuple[str, str, str], examples: _Examples) -> DriftCell:
        status = self.status(i)
        cov_status = self.coverage_status(i)
        kind = MetricKind.CONTINUOUS if self.scored[i] else MetricKind.BINARY
        return DriftCell(
            fingerprint=label[0],
            cluster=label[1],
            dimension=label[2],
            kind=kind,
            status=status,
            baseline=self._window(i, _BASELINE),
            current=self._window(i, _CURRENT),
            p_value=_opt(self.p[i]),
            adjusted_p=_opt(self.adjusted[i]),
            delta=_opt(self.delta[i]),
            delta_low=_opt(self.low[i]),
            delta_high=_opt(self.high[i]),
            gate=float(self.gates[i]),
            mde=_opt(self.mde[i]),
            mde_adjusted=_opt(self.mde_adjusted[i]),
            coverage=Coverage(
                status=cov_status,
                rise=_opt(self.rise[i]),
                p_value=_opt(self.cov_p[i]),
                adjusted_p=_opt(self.cov_adjusted[i]),
                examples=examples.unusable(i) if cov_status is CoverageStatus.COVERAGE_DROP else (),
            ),
            examples=examples.for_signal(i, kind, status) if status in _SIGNALS else (),
        )

    def _window(self, i: int, w: int) -> WindowCounts:
        c = self.counts[i, w]
        return WindowCounts(
            passed=int(c[_PASS]),
            failed=int(c[_FAIL]),
            unclear=int(c[_UNCLEAR]),
            error=int(c[_ERROR]),
            scored=int(c[_SCORE]),
            level=_opt(self.level[i, w]),
        )


_SIGNALS = (CellStatus.REGRESSION, CellStatus.IMPROVEMENT)


class _Examples:
    """Deterministic example trace ids from the current window: most recent first, then input order."""

    def __init__(
        self,
        limit: int,
        table: pa.Table,
        rows: np.ndarray,  # table row of each windowed row
        cell_of_row: np.ndarray,
        win: np.ndarray,
        values: np.ndarray,
        scores: np.ndarray,
        ts: np.ndarray,
    ) -> None:
        import numpy as np

        self.limit = limit
        self.table = table
        current = np.flatnonzero(win == _CURRENT)
        order = current[np.lexsort((current, -ts[current], cell_of_row[current]))]
        self.rows = rows
        self.order = order
        self.cells = cell_of_row[order]
        self.values = values
        self.scores = scores

    def _pick(
        self, cell: int, keep: Callable[[np.ndarray], np.ndarray], by_score: int = 0
    ) -> tuple[str, ...]:
        import numpy as np

        lo, hi = np.searchsorted(self.cells, [cell, cell + 1])
        chosen = self.order[lo:hi]
        chosen = chosen[keep(self.values[chosen])]
        if by_score:  # stable sort keeps "most recent first" among equal scores
            chosen = chosen[np.argsort(by_score * self.scores[chosen], kind="stable")]
        ids = self.table.column("trace_id").take(self.rows[chosen[: self.limit]]).to_pylist()
        return tuple(str(v) for v in ids)

    def for_signal(self, cell: int, kind: MetricKind, status: CellStatus) -> tuple[str, ...]:
        worse = status is CellStatus.REGRESSION
        if kind is MetricKind.CONTINUOUS:  # lowest scores for a regression, highest otherwise
            return self._pick(cell, lambda v: v == _SCORE, by_score=1 if worse else -1)
        return self._pick(cell, lambda v: v == (_FAIL if worse else _PASS))

    def unusable(self, cell: int) -> tuple[str, ...]:
        return self._pick(cell, lambda v: (v == _UNCLEAR) | (v == _ERROR))


def _score_samples(
    cell_of_row: np.ndarray,
    win: np.ndarray,
    values: np.ndarray,
    scores: np.ndarray,
    cells: np.ndarray,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Scores per (cell, window) for the continuous cells, via one sort instead of per-cell masks."""
    import numpy as np

    is_score = np.flatnonzero(values == _SCORE)
    key = cell_of_row[is_score] * 2 + win[is_score]
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    vals = scores[is_score][order]
    out = {}
    for c in cells.tolist():
        lo, mid, hi = np.searchsorted(key_sorted, [2 * c, 2 * c + 1, 2 * c + 2])
        out[c] = (vals[lo:mid], vals[mid:hi])
    return out


def _opt(x: float) -> float | None:
    return None if x != x else float(x)  # NaN -> None


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _us(t: datetime) -> int:
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
    codes[no_verdict] = np.where(np.isfinite(scores[no_verdict]), _SCORE, _ERROR)
    scores[codes != _SCORE] = np.nan
    return codes, scores


def _cell_labels(
    keys: np.ndarray, fp_names: list[str], cl_names: list[str], dim_names: list[str]
) -> list[tuple[str, str, str]]:
    n_cl, n_dim = len(cl_names), len(dim_names)
    return [
        (fp_names[k // (n_cl * n_dim)], cl_names[(k // n_dim) % n_cl], dim_names[k % n_dim])
        for k in keys.tolist()
    ]
