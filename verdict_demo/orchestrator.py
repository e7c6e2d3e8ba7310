"""The demo run: fake LLM → app → `verdict-collector` → span lake → `verdict-daemon` → summary + report.

1. a fresh data dir (a previous demo dir is deleted; any other non-empty dir is refused);
2. the bundled fake LLM (`FakeOpenAI` + `SupportLLM`) in this process, on 127.0.0.1;
3. `verdict-collector` (embedded storage in the data dir) and `verdict-daemon` with a generated config
   whose schedules are compressed to seconds, as real processes on loopback;
4. the support-bot app (its own process), told day by day which simulated day it lives; on the
   regression day the fake LLM starts corrupting one intent's answers;
5. wait until the daemon has sampled and judged every trace and run drift on all of it; take the closing
   decision of the last full UTC day (the last simulated day), as the daemon does at midnight; wait until
   the daemon's alert job has logged its signals; stop the daemon and the collector (SIGTERM: clean
   shutdowns); read the summary from that decision; write the HTML report.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from verdict import environment
from verdict.pidlock import HeldElsewhere, PidFileLock
from verdict_daemon.errors import DaemonError
from verdict_daemon.store.drift_runs import DriftRunReport
from verdict_daemon.store.state import StateStore
from verdict_demo.judge import NAME as OFFLINE_JUDGE
from verdict_demo.llm import SupportLLM
from verdict_demo.processes import Child, ComponentFailed, Interrupted, spawn
from verdict_demo.scenario import INTENTS, TENANT, Scenario
from verdict_demo.summary import DemoSummary, read_summary
from verdict_demo.watchdog import JudgeProgress, Watchdog

if TYPE_CHECKING:
    from verdict_demo.fake_llm import FakeOpenAI

MARKER = ".verdict-demo"
_COLLECTOR_READY = re.compile(r"verdict-collector ready http=[\d.]+:(\d+)")
_DAEMON_READY = re.compile(r"verdict-daemon ready")
START_TIMEOUT = 180.0  # imports alone take seconds on a busy machine
DAY_TIMEOUT = 600.0
STALL_TIMEOUT = 180.0  # no usable judgment (nor sampling, clustering, alerts) for this long: the demo gives up
Progress = Callable[[str], None]


@dataclass(frozen=True)
class DemoOptions:
    data_dir: Path
    scenario: Scenario
    judge_model: str = OFFLINE_JUDGE


def _holder(lock_file: Path) -> str | None:
    """The pid holding a component's lock file (a collector or daemon still running on the dir), or None."""
    if not lock_file.is_file():
        return None
    lock = PidFileLock(lock_file)
    try:
        lock.acquire()
    except HeldElsewhere as held:
        return held.holder_pid
    lock.release()
    return None


def _storage_error(doing: str, exc: OSError) -> DaemonError:
    return DaemonError("storage_error", f"--data-dir: cannot {doing}: {exc.strerror}")


def check_data_dir(path: Path) -> bool:
    """Refuse a data dir the demo may not delete (without touching it); True if it is a previous demo's."""
    path = path.resolve()
    try:
        return _is_previous_demo_dir(path)
    except OSError as exc:
        raise _storage_error(f"read {path}", exc) from None


def _is_previous_demo_dir(path: Path) -> bool:
    if not path.exists():
        return False
    if not path.is_dir():
        raise DaemonError("invalid_config", f"--data-dir: {path} is not a directory")
    if not (path / MARKER).is_file():
        if any(path.iterdir()):
            raise DaemonError("invalid_config", f"--data-dir: {path} is not empty and was not created by the demo "
                              "(the demo deletes and recreates its data dir on every run): choose another directory")
        return False
    for name, lock_file in (("verdict-collector", "collector.lock"), ("verdict-daemon", "daemon.lock")):
        if (pid := _holder(path / lock_file)) is not None:
            raise DaemonError("already_running", f"--data-dir: {path} is in use by a running {name} (pid {pid}): "
                              "another demo is running on it, or a killed one is still shutting down")
    return True


def prepare_data_dir(path: Path) -> Path:
    """A fresh, empty data dir: a previous demo's dir (it carries MARKER) is deleted; anything else is kept."""
    path = path.resolve()
    if check_data_dir(path):
        try:
            shutil.rmtree(path)
        except OSError as exc:
            raise _storage_error(f"delete the previous demo's {path}", exc) from None
    try:
        (path / "logs").mkdir(parents=True, exist_ok=True)
        (path / MARKER).write_text("created by `python -m verdict_demo`, which deletes it on its next run\n")
    except OSError as exc:
        raise _storage_error(f"create {path}", exc) from None
    return path


def daemon_config(data_dir: Path, scenario: Scenario, judge_model: str) -> str:
    """verdict.toml for the demo: the production settings, with schedules compressed to seconds and the
    drift windows fitted to the simulated days (baseline = all days before the gap day)."""
    offline = judge_model == OFFLINE_JUDGE
    return f"""# Generated by `python -m verdict_demo`: schedules compressed so every job runs within seconds.
data_dir = {json.dumps(str(data_dir))}
state_lock_timeout_seconds = 30

[[tenants]]
id = "{TENANT}"

[schedules]
sample = {{ interval_seconds = 2 }}
judge = {{ interval_seconds = 1 }}
assign = {{ interval_seconds = 1 }}
drift = {{ interval_seconds = 3 }}
alert = {{ interval_seconds = 2 }}
compact_retain = {{ cron = "17 3 * * *" }}

[sampling]
seed = {scenario.seed}
per_cluster_per_window = {scenario.per_day * 3}   # every trace: the demo's traffic is small
max_traces_per_run = 100000
lookback_days = {scenario.days + 1}

[judging]
concurrency = {4 if offline else 8}
stop_grace_seconds = 5

[drift]
current_window_hours = 24
gap_hours = 24
baseline_days = {scenario.days - 2}
min_usable = {min(30, scenario.per_day * 3 // 4)}

[[evaluators]]
name = "quality"
kind = "rubric"
model = {json.dumps(judge_model)}
"""


@dataclass(frozen=True)
class DaemonProgress:
    sampled: int
    judged: int  # sampled traces with at least one attempt
    usable: int  # sampled traces with a usable (OK) judgment
    last_error: str | None  # "[code] message" of the newest failed judge attempt
    assigned: int
    drift_runs: int
    caught_up: bool  # the latest drift run read every judgment there is now
    alerts: int  # signals the alert job has logged (a `signal tenant=...` line in daemon.log)
    unalerted: int  # signals raised but not yet through the alert job

    def done(self, expected: int) -> bool:
        return self.sampled == expected and self.caught_up and self.unalerted == 0

    def judge_progress(self) -> JudgeProgress:
        return JudgeProgress(self.sampled, self.usable, self.assigned, self.alerts, self.last_error)


def daemon_progress(store: StateStore) -> DaemonProgress:
    from verdict_daemon.store.drift_runs import fingerprints, judgment_table
    from verdict_daemon.store.progress import state_counts

    c = state_counts(store, TENANT)
    sampled, judged, usable, assigned, last_run = c.sampled, c.judged, c.usable, c.assigned, c.last_run
    caught_up = False
    if sampled and judged == sampled == assigned and last_run is not None and c.last_judged is not None \
            and last_run > c.last_judged:
        # The run may have read its input just before the last judgments landed: compare its size too.
        caught_up = all(judgment_table(store, TENANT, fp).num_rows == c.last_run_judgments
                        for fp in fingerprints(store, TENANT))
    return DaemonProgress(sampled, judged, usable, c.last_error, assigned, c.drift_runs, caught_up, c.alerts,
                          c.unalerted)


class DemoRun:
    def __init__(self, options: DemoOptions, progress: Progress,
                 stop_requested: Callable[[], int | None] = lambda: None) -> None:
        """`stop_requested` returns the signal number once one arrived: the signal handler only records
        it and the run polls it between steps, so cleanup is never cut short midway."""
        self.options = options
        self.stop_requested = stop_requested
        self.scenario = options.scenario
        self.progress = progress
        self.children: list[Child] = []
        self.llm: FakeOpenAI | None = None

    def _start(self, name: str, module_args: list[str], log: str, *, pipes: bool = False) -> Child:
        child = spawn(name, module_args, self.data_dir / "logs" / log, pipes=pipes,
                      env={"PYTHONUNBUFFERED": "1"})
        self.children.append(child)
        return child

    def _checkpoint(self) -> None:
        """Raise Interrupted once a stop signal arrived, ComponentFailed once a child died."""
        signum = self.stop_requested()
        if signum is not None:
            raise Interrupted(signum)
        for child in self.children:
            child.check_alive()

    def run(self) -> DemoSummary:
        started = time.monotonic()
        try:
            return self._run(started)
        finally:
            self.shutdown()

    def _run(self, started: float) -> DemoSummary:
        from verdict_demo.fake_llm import FakeOpenAI

        scenario, say = self.scenario, self.progress
        # The simulated days are UTC days ending yesterday (backdating.day_noon), fixed now so a run
        # crossing midnight still closes the day its traffic landed in.
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        self._checkpoint()  # a Ctrl-C during start-up: leave the previous data dir alone
        self.data_dir = prepare_data_dir(self.options.data_dir)
        say(f"fresh data dir {self.data_dir}")
        handler = SupportLLM(scenario)
        self.llm = FakeOpenAI()
        self.llm.handler = handler
        self.llm.start()
        say(f"bundled fake LLM (OpenAI-compatible, offline) on {self.llm.base_url}")

        collector = self._start("verdict-collector", [
            "collector", "--data-dir", str(self.data_dir), "--http-port", "0", "--grpc-port", "-1",
            "--decode-workers", "1", "--batch-delay-ms", "50", "--min-free-disk-bytes", str(64 << 20)],
            "collector.log")
        port = collector.wait_for_log(_COLLECTOR_READY, START_TIMEOUT, self._checkpoint).group(1)
        collector_url = f"http://127.0.0.1:{port}"
        say(f"verdict-collector ready on {collector_url} (pid {collector.pid})")

        config = self.data_dir / "verdict.toml"
        config.write_text(daemon_config(self.data_dir, scenario, self.options.judge_model))
        daemon = self._start("verdict-daemon", ["verdict_daemon.cli.daemon", "--config", str(config)], "daemon.log")
        # The app starts alongside (its imports take seconds); it sends nothing until told which day it is.
        app = self._start("support-bot app", ["verdict_demo.app", collector_url, self.llm.base_url,
                                              str(scenario.days), str(scenario.per_day), str(scenario.seed),
                                              today.isoformat()],
                          "app.log", pipes=True)
        daemon.wait_for_log(_DAEMON_READY, START_TIMEOUT, self._checkpoint)
        say(f"verdict-daemon ready (pid {daemon.pid}, config {config}, judge {self.options.judge_model})")
        app.read_line(START_TIMEOUT, self._checkpoint)
        say(f"support-bot app ready (pid {app.pid}): verdict.init() + instrument(), the openai client -> fake LLM; "
            f"{scenario.days} simulated days to send")
        regression = scenario.regression
        sent = 0
        for day in range(scenario.days):
            if day == regression.day:
                handler.regressed = True
                say(f"day {day + 1}: injecting a regression: the fake LLM now corrupts {regression.share:.0%} of the "
                    f"{regression.intent} answers ({regression.kind}, CorruptionInjector)")
            app.send(f"day {day}")
            sent += int(app.read_line(DAY_TIMEOUT, self._checkpoint).split()[2])
            say(f"day {day + 1}/{scenario.days}: {sent} support requests sent so far "
                f"({len(INTENTS)} intents, {scenario.per_day} per intent per day)")
        app.stop_input()
        if app.proc.wait(60) != 0:
            raise ComponentFailed(f"support-bot app exited with code {app.proc.returncode}; log {app.log_path}")
        self.children.remove(app)

        self._wait_for_daemon(sent)
        self._checkpoint()
        say(f"the demo takes the closing decision of the last full UTC day ({today - timedelta(days=1):%Y-%m-%d}, "
            f"simulated day {scenario.days}), as the daemon does at midnight: a drift run as of "
            f"{today:%Y-%m-%d} 00:00 UTC")
        closing = self._close_last_day(config, today)
        self._wait_for_daemon(sent)  # the daemon's alert job logs the closing decision's signals
        self._checkpoint()
        say("stopping verdict-daemon and verdict-collector (SIGTERM)")
        for child in (daemon, collector):
            code = child.stop(grace=60)
            self.children.remove(child)
            if code != 0:
                raise ComponentFailed(f"{child.name} exited with code {code} on SIGTERM; log {child.log_path}")
        self._checkpoint()
        report, note = self._report()
        self._checkpoint()
        return read_summary(
            StateStore(self.data_dir, lock_timeout=30), self.data_dir, TENANT, judge_model=self.options.judge_model,
            offline=self.options.judge_model == OFFLINE_JUDGE, closing=closing, days=scenario.days, per_day=scenario.per_day,
            seed=scenario.seed, regression=regression, corrupted=handler.corrupted, report=report, report_note=note,
            elapsed=time.monotonic() - started)

    def _close_last_day(self, config: Path, today: datetime) -> list[DriftRunReport]:
        """The closing decision of the UTC day before `today`, per evaluator fingerprint: a drift look exactly
        on the period grid (`drift_runs.plan`), through the state store the running daemon shares."""
        from verdict_daemon.config import load_config
        from verdict_daemon.service.drift_runs import run_drift
        from verdict_daemon.store.drift_runs import fingerprints

        store = StateStore(self.data_dir, lock_timeout=30)
        drift = load_config(config).drift
        return [run for fingerprint in fingerprints(store, TENANT)
                for run in run_drift(store, TENANT, fingerprint, drift, today)]

    def _wait_for_daemon(self, expected: int) -> None:
        store = StateStore(self.data_dir, lock_timeout=30)
        watchdog = Watchdog(expected, STALL_TIMEOUT, time.monotonic())
        last, said_at = None, 0.0
        while True:
            self._checkpoint()
            state = daemon_progress(store)
            now = time.monotonic()
            if state != last:
                last = state
                if now - said_at >= 2 or state.done(expected):
                    said_at = now
                    failed = state.judged - state.usable
                    self.progress(f"verdict-daemon: sampled {state.sampled}/{expected}, judged {state.usable}"
                                  + (f" (+{failed} failed)" if failed else "")
                                  + f", clustered {state.assigned}, drift runs {state.drift_runs}, "
                                  f"alerts {state.alerts}")
            if state.done(expected):
                return
            try:
                eta = watchdog.observe(state.judge_progress(), now)
            except ComponentFailed as exc:
                raise ComponentFailed(f"{exc.message}; log {self.data_dir / 'logs' / 'daemon.log'}") from None
            if eta:
                self.progress(eta)
            time.sleep(1)

    def _report(self) -> tuple[str | None, str | None]:
        """The HTML report (verdict_daemon.report), or why there is none."""
        try:
            from verdict_daemon.report import write_report
        except ImportError:
            return None, "the HTML report is not available in this build (verdict_daemon.report is missing)"
        try:
            return str(write_report(self.data_dir, TENANT, self.data_dir / "report.html")), None
        except DaemonError as exc:
            return None, f"the report could not be written [{exc.code}]: {exc.message}"
        except Exception as exc:  # another component's bug must not hide the demo's result
            if environment.debug():
                raise
            return None, f"the report could not be written: {type(exc).__name__} (VERDICT_DEBUG=1 for details)"

    def shutdown(self) -> None:
        """Stop whatever still runs, newest first (the app, then the daemon, then the collector)."""
        for child in reversed(self.children):
            child.stop(grace=60)
        self.children.clear()
        if self.llm is not None:
            self.llm.stop()
            self.llm = None
