"""The signal page's pass-rate chart (real app over the real pipeline's state): one chart of the selected cell
with dated day ticks, the Wilson band, and every run that raised the cell marked."""

from __future__ import annotations

import re

from tests.ui.conftest import state_rows


def test_the_chart_marks_every_run_that_raised_the_cell_on_a_dated_axis(ui, lake, ids):
    signal = ids["acme"].signals[0]
    [(fingerprint, cluster, dimension, kind)] = state_rows(
        lake.data_dir, "SELECT DISTINCT fingerprint, cluster, dimension, kind FROM drift_signals WHERE signal_id = $s",
        s=signal)
    raised = state_rows(lake.data_dir, """
        SELECT DISTINCT strftime(r.as_of, '%Y-%m-%d %H:%M') FROM drift_signals s JOIN drift_runs r USING (run_id)
        WHERE s.fingerprint = $fp AND s.cluster = $c AND s.dimension = $d AND s.kind = $k ORDER BY 1""",
                        fp=fingerprint, c=cluster, d=dimension, k=kind)
    page = ui["acme"].get(f"/signals/{signal}").text
    [chart] = re.findall(r'<svg class="chart rate-chart".*?</svg>', page, re.S)  # one chart: the selected cell
    alarms = re.findall(r'<g class="alarm"><title>raised by the (?:closing decision|early look) as of ([0-9: -]+) UTC',
                        chart)
    assert raised and sorted(alarms) == [r[0] for r in raised]
    assert f"the {len(raised)} run(s) that raised this cell" in page
    assert 'class="band"' in chart
    days = re.findall(r'<text class="tick"[^>]*>(\d\d-\d\d)</text>', chart)
    assert len(set(days)) >= 3 and days == sorted(days)  # dated ticks along the axis, not only both ends
