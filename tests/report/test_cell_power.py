"""Honest power per cell (issue 27): every cell a drift run saw is stored with it (`drift_cells`), and the
report's heatmap shows each tested cell's MDE after correction, the detector's own figure, and each untested
cell why and the window that would test it. Checked against the same detector (the daemon's drift config at
the run's alpha) over the same judgment table at the run's as_of, on a state the real pipeline built."""

from __future__ import annotations

from datetime import UTC

import pytest

from tests.daemon.conftest import make_config
from tests.report.conftest import section
from tests.report.test_data import AT
from verdict.drift import CellStatus
from verdict_daemon.report import build_report
from verdict_daemon.report.render import render
from verdict_daemon.store.drift_runs import CURRENT_TOO_SMALL, judgment_table
from verdict_daemon.store.state import StateStore


def _detector_report(lake, tenant: str, quality):
    run = quality.run
    table = judgment_table(StateStore(lake.data_dir), tenant, quality.fingerprint).drop_columns(["attempt_id"])
    return make_config(lake.data_dir).drift.detector(run.alpha).detect(table, now=run.as_of.replace(tzinfo=UTC))


def test_a_stable_tested_cell_shows_the_detectors_adjusted_mde(lake):
    data = build_report(lake.data_dir, "acme", generated_at=AT)
    quality = section(data, "quality")
    report = _detector_report(lake, "acme", quality)
    stable = [c for c in quality.heatmap
              if report.cell(quality.fingerprint, c.cluster, c.dimension).status is CellStatus.STABLE]
    assert stable, "the lake has stable tested cells"
    html = render(data)
    for c in stable:
        cell = report.cell(quality.fingerprint, c.cluster, c.dimension)
        assert not c.not_tested and c.mde is not None
        assert c.mde == pytest.approx(cell.mde_adjusted, rel=1e-12)
        assert (c.tested.current_n, c.tested.baseline_n) == (cell.current.usable, cell.compared.usable)
        assert (f"{c.cluster} × {c.dimension}: " in html
                and f"tested: MDE {c.mde:.3f} (the smallest drop found with 80 % power after correction; "
                    f"n {cell.current.usable} vs {cell.compared.usable})" in html)
    # the signal's cell too: the figure stored with the signal is the cell's
    [row] = quality.signals
    flagged = next(c for c in quality.heatmap if (c.cluster, c.dimension) == (row.signal.cluster, row.signal.dimension))
    assert flagged.mde == row.mde


def test_an_untested_cell_says_why_with_the_detectors_window(lake):
    """umbrella's cells stay under min_usable (6 traces a day): stored as not tested for the current window,
    with DriftReport.window_to_test of the same detector, and no MDE."""
    data = build_report(lake.data_dir, "umbrella", generated_at=AT)
    quality = section(data, "quality")
    report = _detector_report(lake, "umbrella", quality)
    small = [c for c in quality.heatmap if c.usable]
    assert small
    html = render(data)
    for c in small:
        cell = report.cell(quality.fingerprint, c.cluster, c.dimension)
        assert c.tested is not None and c.tested.not_tested == CURRENT_TOO_SMALL and c.mde is None
        assert c.window_to_test == report.window_to_test(cell)
        assert f"not tested: n={c.usable} &lt; min_usable 30; a {c.window_to_test.days}-day window would reach it" in html
