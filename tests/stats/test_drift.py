"""DriftDetector on synthetic judgment streams with known injected drops, and on clean data."""

from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from verdict.drift import CellStatus, CoverageStatus, DriftDetector, DriftInputError, MetricKind
from verdict.inject import synthetic_judgments
from verdict.stats import minimum_detectable_drop

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def table_from_rows(rows):
    """rows: (started_at, trace_id, cluster, dimension, value, fingerprint[, score])."""
    cols = list(zip(*rows, strict=True))
    data = {
        "started_at": pa.array(cols[0], pa.timestamp("us", tz="UTC")),
        "trace_id": pa.array(cols[1]),
        "cluster": pa.array(cols[2]),
        "dimension": pa.array(cols[3]),
        "value": pa.array(cols[4], pa.string()),
        "fingerprint": pa.array(cols[5]),
    }
    if len(cols) > 6:
        data["score"] = pa.array(cols[6], pa.float64())
    return pa.table(data)


def cell_rows(
    rng,
    n,
    *,
    start,
    span,
    cluster="billing",
    dimension="relevance",
    fp="fp1",
    pass_rate=0.9,
    prefix="t",
):
    times = [start + timedelta(seconds=float(s)) for s in rng.uniform(0, span.total_seconds(), n)]
    values = np.where(rng.random(n) < pass_rate, "PASS", "FAIL")
    return [
        (t, f"{prefix}{i}", cluster, dimension, v, fp)
        for i, (t, v) in enumerate(zip(times, values, strict=True))
    ]


def score_rows(rng, values, window, *, prefix, cluster="search", dimension="helpfulness", fp="fp"):
    start, span = window
    offsets = rng.uniform(0, span.total_seconds(), len(values))
    return [
        (
            start + timedelta(seconds=float(o)),
            f"{prefix}{i}",
            cluster,
            dimension,
            None,
            fp,
            float(v),
        )
        for i, (o, v) in enumerate(zip(offsets, values, strict=True))
    ]


BASELINE = (NOW - timedelta(days=9), timedelta(days=7))  # the default baseline window
CURRENT = (NOW - timedelta(hours=24), timedelta(hours=23, minutes=59))


@pytest.mark.parametrize("seed", range(5))
def test_injected_drop_is_detected_in_the_right_cell(seed):
    table = synthetic_judgments(
        120_000, now=NOW, clusters=10, dimensions=5, drops={("c03", "d1"): 0.25}, seed=seed
    )
    report = DriftDetector().detect(table, now=NOW)
    assert [(c.cluster, c.dimension) for c in report.signals] == [("c03", "d1")]
    hit = report.signals[0]
    assert hit.status is CellStatus.REGRESSION
    assert hit.delta is not None and hit.delta_low is not None and hit.delta_high is not None and hit.adjusted_p is not None
    assert hit.delta <= -0.147 and hit.delta_low < hit.delta < hit.delta_high
    assert hit.adjusted_p <= 0.05
    assert len(report.cells) == 50 and report.tested == 50


def test_signal_statistics_match_scipy_on_the_cell_counts():
    table = synthetic_judgments(
        60_000, now=NOW, clusters=4, dimensions=3, drops={("c01", "d2"): 0.3}, seed=2
    )
    report = DriftDetector().detect(table, now=NOW)
    cell = report.cell("fp-default", "c01", "d2")
    cur, base = cell.current, cell.baseline
    p = stats.fisher_exact(np.array([[cur.passed, cur.failed], [base.passed, base.failed]])).pvalue
    assert cell.p_value == pytest.approx(p, rel=1e-9)
    assert cell.delta == pytest.approx(cur.passed / cur.usable - base.passed / base.usable)
    assert cell.current.level == pytest.approx(cur.passed / cur.usable)
    assert base.level is not None
    assert cell.mde == pytest.approx(
        float(minimum_detectable_drop(base.level, base.usable, cur.usable, alpha=report.quality_alpha))
    )


def test_examples_are_failing_current_traces_most_recent_first():
    table = synthetic_judgments(
        60_000, now=NOW, clusters=4, dimensions=3, drops={("c01", "d2"): 0.3}, seed=4
    )
    report = DriftDetector().detect(table, now=NOW)
    (signal,) = report.signals
    rows = table.to_pydict()
    index = {t: i for i, t in enumerate(rows["trace_id"])}
    picked = [index[t] for t in signal.examples]
    assert len(picked) == 5
    for i in picked:
        assert rows["value"][i] == "FAIL" and (rows["cluster"][i], rows["dimension"][i]) == (
            "c01",
            "d2",
        )
        assert rows["started_at"][i] >= report.current_start
    times = [rows["started_at"][i] for i in picked]
    assert times == sorted(times, reverse=True)
    # the latest failing trace of the cell is the first example
    latest = max(
        (rows["started_at"][i], i)
        for i in range(len(rows["value"]))
        if rows["value"][i] == "FAIL"
        and (rows["cluster"][i], rows["dimension"][i]) == ("c01", "d2")
    )
    assert picked[0] == latest[1]
    assert DriftDetector().detect(table, now=NOW).signals[0].examples == signal.examples


def false_alarm_runs(seeds, **detector):
    alarms = 0
    for seed in seeds:
        table = synthetic_judgments(10_000, now=NOW, clusters=4, dimensions=3, seed=1000 + seed)
        alarms += bool(DriftDetector(**detector).detect(table, now=NOW).signals)
    return alarms


def test_clean_data_false_alarm_rate_is_at_most_alpha():
    """200 clean runs of 12 cells (about 90 current and 650 baseline judgments each). Without the effect gate the per-run false-alarm rate is the
    BH family-wise rate under the global null, <= alpha; the count must not be significantly above
    200·alpha (one-sided binomial test at the 0.001 level). Unadjusted per-cell tests would alarm in
    roughly 1 - 0.95^12 = 46 % of runs and fail this."""
    runs = 200
    alarms = false_alarm_runs(range(runs), pass_rate_gate=0.0)
    assert stats.binom.sf(alarms - 1, runs, 0.05) > 0.001, f"{alarms} false alarms in {runs} runs"
    assert false_alarm_runs(range(runs)) <= alarms  # the default 5-point gate only removes signals


def test_fingerprints_are_never_pooled():
    rng = np.random.default_rng(0)
    rows = (
        cell_rows(rng, 400, start=BASELINE[0], span=BASELINE[1], fp="fp-old", prefix="a")
        + cell_rows(
            rng, 200, start=CURRENT[0], span=CURRENT[1], fp="fp-new", pass_rate=0.5, prefix="b"
        )
        + cell_rows(rng, 400, start=BASELINE[0], span=BASELINE[1], fp="fp-new", prefix="c")
        + cell_rows(rng, 200, start=CURRENT[0], span=CURRENT[1], fp="fp-old", prefix="d")
    )
    report = DriftDetector().detect(table_from_rows(rows), now=NOW)
    by_fp = report.by_fingerprint()
    assert set(by_fp) == {"fp-old", "fp-new"}
    assert report.cell("fp-new", "billing", "relevance").status is CellStatus.REGRESSION
    assert report.cell("fp-old", "billing", "relevance").status is CellStatus.STABLE
    assert report.cell("fp-old", "billing", "relevance").current.usable == 200
    # baseline only under one fingerprint and current only under another: nothing to compare
    only = cell_rows(rng, 400, start=BASELINE[0], span=BASELINE[1], fp="A") + cell_rows(
        rng, 200, start=CURRENT[0], span=CURRENT[1], fp="B", pass_rate=0.2, prefix="x"
    )
    split = DriftDetector().detect(table_from_rows(only), now=NOW)
    assert {c.status for c in split.cells} == {CellStatus.INSUFFICIENT}
    assert split.cell("A", "billing", "relevance").current.total == 0
    assert split.cell("A", "billing", "relevance").mde is None


def test_a_drop_under_one_fingerprint_stays_there():
    table = synthetic_judgments(
        120_000,
        now=NOW,
        clusters=4,
        dimensions=2,
        fingerprints=("judge-v1", "judge-v2"),
        drops={("c02", "d1"): 0.3},
        drop_fingerprint="judge-v2",
        seed=12,
    )
    report = DriftDetector().detect(table, now=NOW)
    assert [(c.fingerprint, c.cluster, c.dimension) for c in report.signals] == [
        ("judge-v2", "c02", "d1")
    ]
    assert len(report.by_fingerprint()["judge-v1"]) == len(report.by_fingerprint()["judge-v2"]) == 8


def test_insufficient_cells_are_reported_with_counts():
    rng = np.random.default_rng(1)
    rows = cell_rows(rng, 400, start=BASELINE[0], span=BASELINE[1]) + cell_rows(
        rng, 29, start=CURRENT[0], span=CURRENT[1], pass_rate=0.0, prefix="z"
    )
    cell = DriftDetector().detect(table_from_rows(rows), now=NOW).cells[0]
    assert cell.status is CellStatus.INSUFFICIENT
    assert cell.current.usable == 29 and cell.baseline.usable == 400
    assert (
        cell.p_value is None
        and cell.adjusted_p is None
        and cell.delta is None
        and cell.examples == ()
    )
    # one more judgment and the same collapse is tested and signalled
    rows += cell_rows(rng, 1, start=CURRENT[0], span=CURRENT[1], pass_rate=0.0, prefix="y")
    assert (
        DriftDetector().detect(table_from_rows(rows), now=NOW).cells[0].status
        is CellStatus.REGRESSION
    )


def test_unusable_verdicts_are_coverage_not_failures_and_rise_is_signalled():
    table = synthetic_judgments(
        60_000, now=NOW, clusters=4, dimensions=3, unusable_rises={("c02", "d0"): 0.4}, seed=6
    )
    report = DriftDetector().detect(table, now=NOW)
    assert [(c.cluster, c.dimension) for c in report.coverage_signals] == [("c02", "d0")]
    cell = report.cell("fp-default", "c02", "d0")
    assert cell.coverage.status is CoverageStatus.COVERAGE_DROP
    assert cell.coverage.rise is not None
    assert cell.coverage.rise > 0.3
    assert cell.status is CellStatus.STABLE  # pass rate among usable verdicts did not move
    rows = table.to_pydict()
    index = {t: i for i, t in enumerate(rows["trace_id"])}
    assert len(cell.coverage.examples) == 5
    assert all(rows["value"][index[t]] in ("UNCLEAR", "ERROR") for t in cell.coverage.examples)
    others = [c for c in report.cells if c is not cell]
    assert all(c.coverage.status is CoverageStatus.STABLE for c in others)


def test_coverage_needs_a_minimum_rise():
    table = synthetic_judgments(
        200_000, now=NOW, clusters=2, dimensions=1, unusable_rises={("c00", "d0"): 0.05}, seed=8
    )
    cell = DriftDetector().detect(table, now=NOW).cell("fp-default", "c00", "d0")
    assert cell.coverage.adjusted_p is not None
    assert cell.coverage.adjusted_p <= 0.05  # significant ...
    assert cell.coverage.status is CoverageStatus.STABLE  # ... but under the 10-point minimum rise
    lenient = (
        DriftDetector(coverage_min_rise=0.03).detect(table, now=NOW).cell("fp-default", "c00", "d0")
    )
    assert lenient.coverage.status is CoverageStatus.COVERAGE_DROP


def _coverage_cell(current_unclear: int):
    """Baseline 700 verdicts, 70 UNCLEAR; current 100 verdicts, `current_unclear` UNCLEAR; the rest PASS."""
    rows = []
    for (start, span), n, unclear in ((BASELINE, 700, 70), (CURRENT, 100, current_unclear)):
        for i in range(n):
            at = start + span * (i + 0.5) / n
            rows.append((at, f"{start:%j}-{i}", "billing", "relevance", "UNCLEAR" if i < unclear else "PASS", "fp"))
    return table_from_rows(rows)


def test_coverage_tests_spend_their_share_of_the_run_alpha():
    """P(a run raises any signal, quality or coverage) <= alpha: quality at 0.9·alpha, coverage at 0.1·alpha."""
    # 10 % -> 20 % UNCLEAR: Fisher p = 0.0060, within alpha = 0.05 but not within its 0.005 share
    report = DriftDetector().detect(_coverage_cell(20), now=NOW)
    cell = report.cell("fp", "billing", "relevance")
    assert cell.coverage.rise == pytest.approx(0.10)
    assert cell.coverage.adjusted_p == pytest.approx(stats.fisher_exact(np.array([[20, 80], [70, 630]])).pvalue)
    assert cell.coverage.status is CoverageStatus.STABLE
    assert (report.quality_alpha, report.coverage_alpha) == (pytest.approx(0.045), pytest.approx(0.005))  # type: ignore[comparison-overlap]  # approx equals the float
    half = DriftDetector(coverage_alpha_share=0.5).detect(_coverage_cell(20), now=NOW)
    assert half.cell("fp", "billing", "relevance").coverage.status is CoverageStatus.COVERAGE_DROP
    stronger = DriftDetector().detect(_coverage_cell(22), now=NOW)  # p = 0.0012
    assert stronger.cell("fp", "billing", "relevance").coverage.status is CoverageStatus.COVERAGE_DROP
    off = DriftDetector(coverage_alpha_share=0).detect(_coverage_cell(40), now=NOW)
    assert off.coverage_signals == () and off.quality_alpha == 0.05
    with pytest.raises(ValueError, match="coverage_alpha_share"):
        DriftDetector(coverage_alpha_share=1)


def test_one_bh_family_spans_every_tested_cell_across_fingerprints_and_kinds():
    rng = np.random.default_rng(2)
    rows = []
    for fp in ("fp1", "fp2"):
        for cl in ("a", "b", "c"):
            drop = 0.15 if (fp, cl) == ("fp2", "b") else 0.0
            for (start, span), n, rate in ((BASELINE, 300, 0.9), (CURRENT, 120, 0.9 - drop)):
                prefix = f"{fp}{cl}{n}"
                rows += cell_rows(
                    rng, n, start=start, span=span, cluster=cl, fp=fp, pass_rate=rate, prefix=prefix
                )
    for window, shift in ((BASELINE, 0.0), (CURRENT, -0.4)):
        rows += score_rows(
            rng, rng.normal(shift, size=150), window, prefix=f"s{shift}", cluster="a"
        )
    rows = [r if len(r) == 7 else (*r, None) for r in rows]
    report = DriftDetector().detect(table_from_rows(rows), now=NOW)
    tested = [c for c in report.cells if c.p_value is not None]
    assert len(tested) == 7
    assert {c.kind for c in tested} == {MetricKind.BINARY, MetricKind.CONTINUOUS}
    _, adjusted, _, _ = multipletests([c.p_value for c in tested], method="fdr_bh")
    np.testing.assert_allclose(np.array([c.adjusted_p for c in tested], dtype=float), adjusted, rtol=1e-12)


def test_continuous_scores_use_mann_whitney_and_cliffs_delta():
    rng = np.random.default_rng(3)
    rows = []
    samples = {}
    for name, window, shift in (("base", BASELINE, 0.0), ("cur", CURRENT, -0.6)):
        samples[name] = rng.normal(shift, size=300 if name == "base" else 100)
        rows += score_rows(rng, samples[name], window, prefix=name)
    rows.append((CURRENT[0] + timedelta(hours=1), "err", "search", "helpfulness", None, "fp", None))
    cell = DriftDetector().detect(table_from_rows(rows), now=NOW).cells[0]
    assert cell.kind is MetricKind.CONTINUOUS
    assert cell.status is CellStatus.REGRESSION
    assert cell.p_value == pytest.approx(
        stats.mannwhitneyu(samples["cur"], samples["base"]).pvalue, rel=1e-9
    )
    u = stats.mannwhitneyu(samples["cur"], samples["base"]).statistic
    assert cell.delta == pytest.approx(2 * u / (100 * 300) - 1)
    assert cell.current.error == 1 and cell.current.scored == 100
    assert cell.current.level == pytest.approx(samples["cur"].mean())
    lowest = np.argsort(samples["cur"])[:5]
    assert cell.examples == tuple(f"cur{i}" for i in lowest)


def test_windows_gap_future_and_configuration():
    rng = np.random.default_rng(5)
    rows = cell_rows(rng, 400, start=BASELINE[0], span=BASELINE[1])
    rows += cell_rows(
        rng,
        300,
        start=NOW - timedelta(hours=47),
        span=timedelta(hours=22),
        pass_rate=0.0,
        prefix="gap",
    )
    rows += cell_rows(
        rng,
        300,
        start=NOW + timedelta(minutes=1),
        span=timedelta(hours=2),
        pass_rate=0.0,
        prefix="future",
    )
    rows += cell_rows(rng, 100, start=CURRENT[0], span=CURRENT[1], prefix="cur")
    # the failing day in the baseline's week would be a weekly pattern: the recent baseline is tested here
    report = DriftDetector(seasonality="off").detect(table_from_rows(rows), now=NOW)
    cell = report.cells[0]
    assert (cell.baseline.usable, cell.current.usable) == (400, 100)
    assert cell.status is CellStatus.STABLE
    assert report.baseline_end == report.current_start - timedelta(hours=24)
    # no gap: the failing "gap" rows now fall in the baseline, which makes the current window look better
    no_gap = DriftDetector(gap=timedelta(0), baseline_window=timedelta(days=8), seasonality="off").detect(
        table_from_rows(rows), now=NOW
    )
    assert (
        no_gap.cells[0].baseline.usable == 700 and no_gap.cells[0].status is CellStatus.IMPROVEMENT
    )
    assert no_gap.cells[0].examples[0].startswith("cur")  # improvements quote passing traces


def test_window_edges_are_half_open_to_the_microsecond():
    us = timedelta(microseconds=1)
    inside = [NOW - timedelta(hours=24), NOW - us,  # current = [now - 24 h, now)
              NOW - timedelta(days=9), NOW - timedelta(hours=48) - us]  # baseline = [now - 9 d, now - 48 h)
    outside = [NOW, NOW - timedelta(hours=24) - us, NOW - timedelta(hours=48), NOW - timedelta(days=9) - us]
    rows = [(t, f"in{i}", "c", "d", "PASS", "fp") for i, t in enumerate(inside)]
    rows += [(t, f"out{i}", "c", "d", "FAIL", "fp") for i, t in enumerate(outside)]
    report = DriftDetector(min_usable=2).detect(table_from_rows(rows), now=NOW)
    cell = report.cells[0]
    assert (cell.baseline.passed, cell.current.passed) == (2, 2)
    assert cell.baseline.failed == cell.current.failed == 0
    assert (report.current_start, report.baseline_end, report.baseline_start) == (
        NOW - timedelta(hours=24), NOW - timedelta(hours=48), NOW - timedelta(days=9))


def test_below_gate_when_significant_but_small():
    table = synthetic_judgments(
        600_000, now=NOW, clusters=1, dimensions=1, drops={("c00", "d0"): 0.03}, seed=9
    )
    cell = DriftDetector().detect(table, now=NOW).cells[0]
    assert cell.adjusted_p is not None and cell.delta is not None
    assert cell.adjusted_p <= 0.05 and abs(cell.delta) < 0.05 == cell.gate
    assert cell.status is CellStatus.BELOW_GATE
    assert cell.mde is not None
    assert cell.mde < 0.03  # the data could see it: the gate decided


def test_numpy_arrow_and_duckdb_inputs_agree():
    table = synthetic_judgments(
        20_000, now=NOW, clusters=3, dimensions=2, drops={("c01", "d1"): 0.4}, seed=10
    )
    as_numpy = {
        "started_at": table.column("started_at").to_numpy().astype("datetime64[us]"),
        **{
            c: np.array(table.column(c).to_pylist())
            for c in ("trace_id", "cluster", "dimension", "value", "fingerprint")
        },
    }
    con = duckdb.connect()
    con.register("judgments", table)
    relation = con.sql("SELECT * FROM judgments")
    reports = [
        DriftDetector().detect(x, now=NOW)
        for x in (table, as_numpy, relation, table.to_batches()[0])
    ]
    for other in reports[1:]:
        assert other.cells == reports[0].cells
    assert [c.cluster for c in reports[0].signals] == ["c01"]


def test_naive_now_is_utc():
    table = synthetic_judgments(20_000, now=NOW, clusters=2, dimensions=2, seed=11)
    naive = DriftDetector().detect(table, now=NOW.replace(tzinfo=None))
    assert naive.cells == DriftDetector().detect(table, now=NOW).cells


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.drop_columns(["cluster"]), r"lack column\(s\) \['cluster'\]"),
        (
            lambda t: t.set_column(4, "value", pa.array(["GOOD"] * t.num_rows)),
            r"unknown verdict\(s\) \['GOOD'\]",
        ),
        (
            lambda t: t.set_column(0, "started_at", pa.array(["2026"] * t.num_rows)),
            "started_at must be a timestamp",
        ),
        (
            lambda t: t.set_column(2, "cluster", pa.array([None] * t.num_rows, pa.string())),
            "cluster has",
        ),
        (
            lambda t: t.set_column(3, "dimension", pa.array(range(t.num_rows))),
            "dimension must be a string",
        ),
    ],
)
def test_bad_input_gets_a_precise_error(mutate, message):
    table = synthetic_judgments(100, now=NOW, clusters=1, dimensions=1)
    with pytest.raises(DriftInputError, match=message):
        DriftDetector().detect(mutate(table), now=NOW)


def test_mixed_verdicts_and_scores_in_one_cell_are_rejected():
    rows = [
        (NOW - timedelta(hours=1), "a", "c", "d", "PASS", "fp", None),
        (NOW - timedelta(hours=2), "b", "c", "d", None, "fp", 0.5),
    ]
    with pytest.raises(DriftInputError, match="mixes"):
        DriftDetector().detect(table_from_rows(rows), now=NOW)


def test_unsupported_input_type_and_bad_configuration():
    with pytest.raises(DriftInputError, match="got list"):
        DriftDetector().detect([{"cluster": "x"}], now=NOW)
    with pytest.raises(ValueError, match="alpha"):
        DriftDetector(alpha=1.5)
    with pytest.raises(ValueError, match="min_usable"):
        DriftDetector(min_usable=1)


def test_no_judgments_in_the_windows_gives_an_empty_report():
    table = synthetic_judgments(1_000, now=NOW, clusters=2, dimensions=2)
    later = DriftDetector().detect(table, now=NOW + timedelta(days=60))
    assert later.cells == () and later.signals == () and later.tested == 0
    assert DriftDetector().detect(table.slice(0, 0), now=NOW).cells == ()
