"""The demo's watchdog: judged traces are progress, drift runs and failed attempts are not; a stalled judge stops
the demo with its error and a hint; a slow judge gets an ETA. Snapshots come from a real state.duckdb."""

from __future__ import annotations

import pytest

from verdict_daemon.store.state import StateStore
from verdict_demo.orchestrator import daemon_progress
from verdict_demo.processes import ComponentFailed
from verdict_demo.scenario import TENANT
from verdict_demo.watchdog import JudgeProgress, Watchdog


def _insert(store: StateStore, *, traces: int, ok: int, failed: int, runs: int) -> None:
    with store.transaction() as con:
        for n in range(traces):
            con.execute("INSERT OR IGNORE INTO sampled_traces VALUES ($t, $id, 's', 'i', 'x', now(), now(), 'q', 'r', "
                        "'', now(), NULL, 'turn')", {"t": TENANT, "id": f"tr{n}"})  # history: none
        for n in range(ok + failed):
            error = (None, None) if n < ok else ("provider_unavailable", "judge: model: server_error: HTTP 500 boom")
            con.execute("INSERT OR IGNORE INTO judgment_attempts VALUES ($t, $a, $id, 'fp', 1, $s, $c, $m, now(), "
                        "0, 0, 0, 'run', 1)", {"t": TENANT, "a": f"a{n}", "id": f"tr{n}", "s": "OK" if n < ok else "ERROR",
                                            "c": error[0], "m": error[1]})
        for n in range(runs):
            con.execute("INSERT OR IGNORE INTO drift_runs VALUES ($t, $r, 'fp', now(), now(), now(), now(), 0.05, 0.1, "
                        "10, 0, 0, 0, 0, 'd', now(), NULL)", {"t": TENANT, "r": f"run{n}"})


def test_failed_attempts_and_drift_runs_are_not_progress(tmp_path):
    store = StateStore(tmp_path)
    _insert(store, traces=30, ok=2, failed=0, runs=0)
    watchdog = Watchdog(expected=30, timeout=180, now=0.0)
    watchdog.observe(daemon_progress(store).judge_progress(), 0.0)
    for minute in range(1, 4):  # the judge fails every call while drift runs keep coming
        _insert(store, traces=30, ok=2, failed=9 * minute, runs=60 * minute)
        state = daemon_progress(store)
        assert (state.usable, state.judged) == (2, 2 + 9 * minute)
        if minute * 60.0 <= 180:
            watchdog.observe(state.judge_progress(), minute * 60.0)
    with pytest.raises(ComponentFailed) as caught:
        watchdog.observe(daemon_progress(store).judge_progress(), 181.0)
    message = str(caught.value)
    assert "no progress for 180 s" in message and "usable judgments: 2 of 30" in message
    assert "[provider_unavailable] judge: model: server_error: HTTP 500 boom" in message
    assert "VERDICT_JUDGE_MODEL" in message  # the hint


def test_usable_judgments_keep_the_demo_alive():
    watchdog = Watchdog(expected=240, timeout=180, now=0.0)
    for step in range(10):
        watchdog.observe(JudgeProgress(240, step, 0, 0, None), step * 170.0)


def test_a_slow_judge_gets_an_eta_up_front_and_then_every_minute():
    watchdog = Watchdog(expected=240, timeout=180, now=0.0)
    assert watchdog.observe(JudgeProgress(240, 0, 0, 0, None), 0.0) is None
    assert watchdog.observe(JudgeProgress(240, 1, 0, 0, None), 34.0) is None  # the first one starts the clock
    eta = watchdog.observe(JudgeProgress(240, 2, 0, 0, None), 68.0)
    assert eta == "judging takes 34.0 s per trace: about 2 h 15 min left for 238 trace(s)"
    assert watchdog.observe(JudgeProgress(240, 3, 0, 0, None), 102.0) is None  # said less than a minute ago
    assert watchdog.observe(JudgeProgress(240, 4, 0, 0, None), 136.0) is not None


def test_a_fast_judge_gets_no_eta():
    watchdog = Watchdog(expected=240, timeout=180, now=0.0)
    said = [watchdog.observe(JudgeProgress(240, n, 0, 0, None), n * 0.2) for n in range(240)]
    assert not any(said)
