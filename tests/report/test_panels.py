"""Panels fed by neighbouring components: probe-run artifacts written by the real probe runner (scripted
target and judge, tests.probes.scripted) and the review queue the real pipeline routed."""

from __future__ import annotations

import json
from collections import Counter

import duckdb
import pytest

from verdict_daemon.errors import DaemonError
from verdict_daemon.report import build_report
from verdict_daemon.report.render import render


def test_probe_runs_are_shown_one_row_per_artifact(lake, probe_runs):
    bad_path, good_path, bad, good = probe_runs
    data = build_report(lake.data_dir, "acme", probes=[bad_path, good_path])
    assert data.probes.empty_reason is None
    rows = {row[0].split(",")[0]: dict(zip(data.probes.columns, row, strict=True)) for row in data.probes.rows}
    assert set(rows) == {"bad.json", "good.json"}
    assert rows["bad.json"]["Pass rate"] == f"{100 * 4 / 6.5:.1f} %"  # the probe runner's own figure: 4 of 6.5
    assert rows["bad.json"]["Gate"] == "FAILED (minimum 50.0 %); failing: sycophancy"
    not_passing = [r.name for r in bad.results if not r.passed]
    assert not_passing and all(name in rows["bad.json"]["Not passing"] for name in not_passing)
    assert rows["good.json"]["Gate"].startswith("passed") and rows["good.json"]["Not passing"] == "none"
    assert rows["good.json"]["Pass / fail / error"] == f"{len(good.results)} / 0 / 0"
    assert rows["bad.json"]["Target / judge model"] == f"{bad.target_model} / {bad.judge_model}"
    page = render(data)
    assert "bad.json" in page and "failing: sycophancy" in page


def test_a_malformed_probe_artifact_is_invalid_config_naming_the_field(lake, probe_runs, tmp_path):
    document = json.loads(probe_runs[0].read_text())
    del document["run_id"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    with pytest.raises(DaemonError) as info:
        build_report(lake.data_dir, "acme", probes=[broken])
    assert info.value.code == "invalid_config" and "run_id: missing" in info.value.message


def test_review_queue_counts_match_the_routed_items(lake):
    data = build_report(lake.data_dir, "acme")
    counts = {key: value for key, value in data.review.counts.rows}
    con = duckdb.connect(str(lake.data_dir / "state.duckdb"), read_only=True)
    try:
        reasons = [json.loads(r) for (r,) in con.execute(
            "SELECT reasons FROM review_items WHERE tenant_id = 'acme'").fetchall()]
        unclear_attempts = con.execute("""
            SELECT count(DISTINCT attempt_id) FROM dimension_verdicts WHERE tenant_id = 'acme' AND value = 'UNCLEAR'
        """).fetchall()[0][0]
    finally:
        con.close()
    by_reason = Counter(reason for item in reasons for reason in item)
    assert counts["Items"] == f"{len(reasons):,}" == f"{lake.summary['review_queued']:,}"
    assert by_reason["unclear"] == unclear_attempts > 0  # every attempt with an UNCLEAR verdict was routed
    assert counts["Routed because: unclear"] == f"{unclear_attempts:,}"
    assert counts["Pending (no label yet)"] == counts["Items"] and counts["Labelled"] == "0"


def test_an_empty_queue_and_no_probes_explain_themselves(lake):
    data = build_report(lake.data_dir, "globex")
    assert "review queue is empty" in (data.review.counts.empty_reason or "")
    assert "No probe results:" in (data.probes.empty_reason or "")


def test_probe_runs_the_daemon_wrote_are_found_in_the_data_dir(lake, probe_runs, tmp_path):
    """Without --probes the report reads <data-dir>/probes/tenant=<tenant> (where the probes job writes): the
    latest run of each series, unreadable files counted in a note; a directory can also be given to --probes."""
    import shutil

    from tests.probes.scripted import GOOD, MINI, scripted_judge, scripted_target
    from verdict.probes.artifact import write_artifact
    from verdict.probes.runner import run_suite
    from verdict_daemon.probes import PROBES_DIR

    data = tmp_path / "data"
    shutil.copytree(lake.data_dir, data)
    runs = data / PROBES_DIR / "tenant=acme"
    runs.mkdir(parents=True)
    shutil.copy(probe_runs[0], runs / "mini-1.0-a.json")  # the failing run, older
    latest = write_artifact(run_suite(MINI, scripted_target(GOOD), scripted_judge()), runs / "mini-1.0-b.json")
    (runs / "torn.json").write_text('{"kind": "verdict.probe_run"')
    panel = build_report(data, "acme").probes
    assert [row[0].split(",")[0] for row in panel.rows] == [latest.name]  # one series: its latest run only
    assert panel.note == "1 file(s) in the probe directory are not readable probe-run artifacts."
    assert "1 file(s) in the probe directory" in render(build_report(data, "acme"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(probe_runs[0], elsewhere / "bad.json")
    given = build_report(data, "acme", probes=[elsewhere]).probes
    assert [row[0].split(",")[0] for row in given.rows] == ["bad.json"] and given.note is None
    (runs / "mini-1.0-a.json").unlink()
    latest.unlink()
    assert build_report(data, "acme").probes.empty_reason == (
        "No probe-run artifact found in probes/tenant=acme/ of the data dir. 1 file(s) in the probe directory are "
        "not readable probe-run artifacts.")
