"""What a drift run stores of each cell it saw (`drift_cells`, `drift_runs.run_cells`): tested with the detector's
own MDE after correction, or why not with the window that would test it (issue 27, honest power)."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa

from verdict_daemon.config import Drift
from verdict_daemon.report.model import HeatCell
from verdict_daemon.report.render import _heat_cell
from verdict_daemon.service.drift_runs import run_cells
from verdict_daemon.store.drift_runs import BASELINE_TOO_SMALL, CURRENT_TOO_SMALL

NOW = datetime(2026, 3, 2)
DAY = timedelta(days=1)


def _table() -> pa.Table:
    """Cluster `steady`: 100 a day for 10 days; `thin`: 10 a day for 10 days; `new`: 100 in the last day only."""
    rng = np.random.default_rng(3)
    rows = [(c, NOW - DAY * float(rng.uniform(0, days))) for c, per_day, days in
            (("steady", 100, 10), ("thin", 10, 10), ("new", 100, 1)) for _ in range(per_day * days)]
    return pa.table({"started_at": pa.array([t for _, t in rows], pa.timestamp("us")),
                     "trace_id": [str(i) for i in range(len(rows))], "cluster": [c for c, _ in rows],
                     "dimension": ["d0"] * len(rows), "value": rng.choice(["PASS", "FAIL"], len(rows), p=[0.8, 0.2]),
                     "fingerprint": ["fp"] * len(rows)})


def test_each_cell_is_stored_tested_with_the_detectors_mde_or_with_why_not():
    config = Drift(seasonality="off", reference_weeks=0, small_cell_weeks=0)
    report = config.detector(0.04).detect(_table(), now=NOW)
    cells = {c.cluster: c for c in run_cells(report, 0.04)}
    steady, thin, new = (report.cell("fp", name, "d0") for name in ("steady", "thin", "new"))
    assert cells["steady"].not_tested is None and cells["steady"].status == "stable"
    assert cells["steady"].mde == steady.mde_adjusted and steady.mde_adjusted is not None
    assert (cells["steady"].current_n, cells["steady"].baseline_n) == (steady.current.usable, steady.baseline.usable)
    assert cells["thin"].not_tested == CURRENT_TOO_SMALL and cells["thin"].mde is None
    window = report.window_to_test(thin)
    assert window is not None and window >= 3 * DAY and cells["thin"].window_to_test_days == window.days
    assert cells["new"].not_tested == BASELINE_TOO_SMALL and new.current.usable >= 30 and new.baseline.usable < 30
    assert cells["new"].window_to_test_days is None
    # a look with nothing to spend tested nothing at a level: no MDE is stored for it
    assert all(c.mde is None for c in run_cells(config.detector(0.05).detect(_table(), now=NOW), 0.0))
    # the heatmap says why, in the report and the UI
    html = _heat_cell(HeatCell("new", "d0", 80, new.current.usable, 0.8, None, 30, None, None, cells["new"]))
    assert (f"not tested: the windows it is compared with hold n={new.baseline.usable} &lt; min_usable 30; "
            "tested once they hold 30") in html
