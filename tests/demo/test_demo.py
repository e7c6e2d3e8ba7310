"""`python -m verdict_demo` as a real process: the real collector, daemon and app processes, the real
`openai` client against the bundled fake LLM, the offline judge, drift, then the summary.

The demo must flag the injected intent and nothing else, leave no process behind, and stop cleanly
on Ctrl-C (SIGINT) mid-run.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import psutil
import pytest

from verdict_demo.judge import Material, completeness
from verdict_demo.orchestrator import check_data_dir
from verdict_demo.scenario import INTENTS

pytestmark = pytest.mark.slow

PER_DAY = 20  # half the default: the same path in less time
DAYS = 9


def _descendants(pid: int) -> set[int]:
    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def _gone(pids: set[int]) -> list[int]:
    """The pids still alive (zombies count as gone: they hold no resources and run nothing)."""
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


class Demo:
    """The demo process, its stderr collected line by line, and every descendant it ever had."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "verdict_demo", *args], cwd=cwd, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.stderr: list[str] = []
        self.stdout = ""
        self.children: set[int] = set()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr or ()), daemon=True).start()
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None  # piped
        self.stdout = self.proc.stdout.read()

    def watch_until(self, predicate, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and not predicate():
            self.children |= _descendants(self.proc.pid)
            if time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError("the demo took too long:\n" + "".join(self.stderr[-30:]))
            time.sleep(0.3)

    def finish(self, timeout: float) -> int:
        self.watch_until(lambda: False, timeout)
        code = self.proc.wait(30)
        time.sleep(0.5)  # let the reader threads drain the pipes
        return code


def _logs(data: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted((data / "logs").glob("*.log")))


def test_the_demo_flags_the_injected_intent_and_nothing_else(tmp_path):
    data = tmp_path / "demo-data"
    demo = Demo(tmp_path, "--data-dir", str(data), "--per-day", str(PER_DAY), "--json")
    code = demo.finish(timeout=400)
    stderr = "".join(demo.stderr)
    assert code == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "Traceback" not in _logs(data)
    assert "NOT an LLM" in stderr  # the output says plainly that the judge is the offline heuristic
    assert demo.children, "the demo started no process"
    assert _gone(demo.children) == []  # collector, its decode worker, daemon, app: all stopped

    summary = json.loads(demo.stdout)
    total = DAYS * PER_DAY * len(INTENTS)
    assert summary["traces"] == summary["sampled"] == summary["judged"] == total
    assert summary["coverage_rate"] == 1.0 and summary["judge_errors"] == 0
    assert (summary["judge_model"], summary["offline_judge"]) == ("offline/heuristic-judge", True)
    injected = summary["injected"]
    assert (injected["intent"], injected["kind"], injected["day"]) == ("coding-help", "truncation", DAYS)
    assert injected["corrupted_answers"] > 0
    assert summary["cells"] == summary["tested"] == len(INTENTS) * 5  # 4 intents x 5 rubric dimensions

    adverse = [s for s in summary["signals"] if s["kind"] in ("regression", "coverage_drop")]
    assert adverse and {s["cluster"] for s in adverse} == {"coding-help"}, adverse
    assert summary["injected_found"] is True and summary["unexpected_signals"] == 0
    assert summary["adverse_signals"] == len(adverse)
    truncation = next(s for s in adverse if s["dimension"] == "completeness")
    assert truncation["kind"] == "regression" and truncation["adjusted_p"] < 0.05
    assert truncation["baseline_level"] > 0.9 and truncation["current_level"] < 0.7
    assert truncation["baseline_n"] == (DAYS - 2) * PER_DAY and truncation["current_n"] == PER_DAY

    # The daemon's alert job logged the signals (the demo waits for it), for the injected intent only.
    alerted = re.findall(r"signal tenant=__verdict_local__ kind=(\w+) cluster=(\S+) dimension=(\S+)",
                         (data / "logs" / "daemon.log").read_text())
    assert summary["alerts"] == len(alerted) >= len(summary["signals"])
    assert ("regression", "coding-help", "completeness") in alerted
    assert {cluster for _, cluster, _ in alerted} == {"coding-help"}

    # The spans came through the real path: intent keys from verdict.intent_context, back-dated days.
    lake = duckdb.connect().execute(
        f"SELECT intent_key, count(*), count(DISTINCT CAST(start_time AS DATE)) FROM read_parquet("
        f"'{data}/spans/tenant=__verdict_local__/*/*.parquet') GROUP BY 1 ORDER BY 1").fetchall()
    assert [(k, n) for k, n, _ in lake] == sorted((i.key, DAYS * PER_DAY) for i in INTENTS)
    assert all(days >= DAYS for _, _, days in lake)

    # The signal's example traces are answers that really are cut off, and the stored rationale says so.
    state = duckdb.connect(str(data / "state.duckdb"), read_only=True)
    examples = truncation["examples"]
    rows = state.execute("SELECT s.response, v.reason FROM sampled_traces s JOIN judgment_attempts a USING "
                         "(tenant_id, trace_id) JOIN dimension_verdicts v USING (tenant_id, attempt_id) WHERE "
                         f"v.dimension = 'completeness' AND s.trace_id IN ({', '.join('?' * len(examples))})",
                         examples).fetchall()
    assert len(rows) == len(examples) > 0
    for response, reason in rows:
        assert completeness(Material(None, None, response)).verdict == "FAIL"
        assert "stops" in reason or "cut off" in reason

    if summary["report"] is not None:  # the report is another component's; the demo only links it
        assert Path(summary["report"]).read_text().lstrip().lower().startswith("<!doctype html")
    else:
        assert summary["report_note"]


def _demo_on_day_2(data: Path) -> Demo:
    """A demo run in the middle of its traffic, with every process it started known."""
    demo = Demo(data.parent, "--data-dir", str(data), "--per-day", str(PER_DAY))
    demo.watch_until(lambda: any("day 2/" in line for line in demo.stderr), timeout=300)
    assert demo.proc.poll() is None, "".join(demo.stderr)
    demo.children |= _descendants(demo.proc.pid)
    assert len(demo.children) >= 3  # collector (+ decode worker), daemon, app
    return demo


def test_ctrl_c_mid_run_stops_every_process_without_a_traceback(tmp_path):
    data = tmp_path / "demo-data"
    demo = _demo_on_day_2(data)
    demo.proc.send_signal(signal.SIGINT)
    code = demo.finish(timeout=120)
    stderr = "".join(demo.stderr)
    assert code == 130, stderr[-3000:]
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert demo.stdout == ""  # no summary for an interrupted run
    assert _gone(demo.children) == []
    assert "Traceback" not in _logs(data)


def test_kill_9_of_the_demo_leaves_no_process_behind(tmp_path):
    """The demo cannot clean up after SIGKILL: its children's watchdogs (verdict_demo.child) stop them."""
    data = tmp_path / "demo-data"
    demo = _demo_on_day_2(data)
    demo.proc.send_signal(signal.SIGKILL)
    demo.proc.wait(30)
    deadline = time.monotonic() + 120
    while _gone(demo.children) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = _gone(demo.children)
    for pid in left:  # fail, but leave nothing running
        psutil.Process(pid).kill()
    assert left == []
    assert "Traceback" not in _logs(data)  # each component went through its own clean SIGTERM shutdown
    assert check_data_dir(data) is True  # the locks are free: the next run may start fresh
