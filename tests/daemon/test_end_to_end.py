"""End to end over loopback, real processes: collector, instrumented app, fake LLM, pipeline, daemon.

The app (tests/daemon/app.py, its own process) sends 4 intents x 9 simulated days of chat calls
through the real openai client to the fake LLM server; the spans go through the real tracing SDK and
OTLP exporter to the real collector process (days are simulated by back-dating span times in the
exporter, see the app's docstring). The fake LLM truncates one intent's answers on the last day
(CorruptionInjector). A scripted judge model reads each graded answer and fails completeness when
the answer stops mid-sentence (and relevance/completeness on refusals). Then:

1. `verdict-pipeline` (a process) must flag exactly (search.v1, completeness), the clean intents silent;
2. `verdict-daemon` (a process, short intervals) on a copy of the lake is killed with SIGKILL mid-judging
   and restarted: no judgment is stored twice, every drift run holds exactly its signal set, and the
   loopback webhook receiver gets the signal exactly once.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import pytest

from tests.collector.conftest import Collector
from tests.daemon.app import DAYS
from tests.daemon.cli import env, pipeline, write_config
from tests.daemon.lakes import INJECTOR, answer_for
from tests.fakes import Reply
from verdict.inject import CorruptionKind

INTENTS = ("billing.v1", "search.v1", "returns.v1", "account.v1")
CORRUPTED = "search.v1"
PER_DAY = 20
MIN_USABLE = 20  # judgments per window and cell before a cell is tested
TENANT = "acme"


def llm_answer(request) -> Reply:
    """The fake LLM: a sound answer, truncated for the corrupted intent on the last day."""
    query = request.body["messages"][-1]["content"]
    intent, day = query[1:].split("]", 1)[0].split(" day ")
    answer = answer_for(query)
    if intent == CORRUPTED and int(day) == DAYS - 1:
        answer = INJECTOR.corrupt(answer, CorruptionKind.TRUNCATION, key=query).corrupted
    return Reply(answer)


class Webhook:
    """A loopback receiver that records every POSTed alert."""

    def __init__(self) -> None:
        received: list[tuple[str, dict]] = []
        self.received = received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.headers["Idempotency-Key"], json.loads(body)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"


def _state(data_dir: Path, query: str, params=()) -> list[tuple]:
    """Read state.duckdb while the daemon may be writing: its transactions are short, so retry."""
    for _ in range(200):
        try:
            con = duckdb.connect(str(data_dir / "state.duckdb"), read_only=True)
        except duckdb.Error:
            time.sleep(0.05)
            continue
        try:
            return con.execute(query, list(params)).fetchall()
        except duckdb.CatalogException:
            return []  # not migrated yet
        finally:
            con.close()
    raise AssertionError("state.duckdb stayed locked")


def _daemon_config(path: Path, data_dir: Path, webhook: str) -> Path:
    path.write_text(f"""
data_dir = "{data_dir}"
state_lock_timeout_seconds = 30

[[tenants]]
id = "{TENANT}"

[[tenants]]
id = "globex"   # no traffic: its jobs have nothing to do and must not disturb acme's

[schedules]
sample = {{ interval_seconds = 2 }}
judge = {{ interval_seconds = 1 }}
assign = {{ interval_seconds = 1 }}
drift = {{ interval_seconds = 3 }}
alert = {{ interval_seconds = 1 }}
compact_retain = {{ cron = "0 3 * * *" }}

[sampling]
per_cluster_per_window = 40

[judging]
concurrency = 4

[drift]
min_usable = {MIN_USABLE}

[[evaluators]]
name = "quality"
kind = "rubric"
model = "tests.daemon.lakes:slow_judge_model"

[alerts]
webhook_url = "{webhook}"
""")
    return path


def _start_daemon(config: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "verdict_daemon.cli.daemon", "--config", str(config)],
                            stderr=log.open("a"), env=env())


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def landed_lake(tmp_path, fake_openai) -> Path:
    """Run the collector and the instrumented app; return the data dir once every span is on disk."""
    fake_openai.handler = llm_answer
    data = tmp_path / "lake"
    collector = Collector(data, ("--allow-claimed-tenant",)).start()
    try:
        app = subprocess.run([sys.executable, "-m", "tests.daemon.app", collector.url, fake_openai.base_url, TENANT,
                              str(PER_DAY), *INTENTS], capture_output=True, text=True, env=env(), timeout=300)
        assert app.returncode == 0, app.stderr[-2000:]
        assert app.stdout.strip() == f"sent {len(INTENTS) * DAYS * PER_DAY}"
    finally:
        assert collector.stop() == 0
    return data


def test_corrupted_intent_is_caught_by_pipeline_and_daemon(landed_lake, tmp_path):
    as_of = datetime.now(UTC).isoformat()
    spans = duckdb.connect().execute(
        f"SELECT intent_key, count(*), count(DISTINCT CAST(start_time AS DATE)) FROM "
        f"read_parquet('{landed_lake}/spans/tenant={TENANT}/*/*.parquet') GROUP BY 1 ORDER BY 1").fetchall()
    assert spans == [(i, DAYS * PER_DAY, pytest.approx(DAYS, abs=1)) for i in sorted(INTENTS)]

    # --- 1. the one-shot pipeline ---------------------------------------------------------------------
    daemon_lake = tmp_path / "daemon-data"
    shutil.copytree(landed_lake / "spans", daemon_lake / "spans")
    config = write_config(tmp_path / "pipeline.toml", landed_lake, f"[drift]\nmin_usable = {MIN_USABLE}\n")
    code, summary, stderr = pipeline("--config", str(config), "--tenant", TENANT, "--as-of", as_of,
                                     "--fail-on-signal")
    assert code == 1, (stderr, summary)  # ran fine, and raised a regression
    assert summary["judged"] == summary["sampled"] == len(INTENTS) * DAYS * PER_DAY and summary["errors"] == 0
    assert summary["missing_intent_key"] == 0
    assert [(s["cluster"], s["dimension"], s["kind"]) for s in summary["signals"]] == \
        [(CORRUPTED, "completeness", "regression")]
    signal_ = summary["signals"][0]
    assert signal_["baseline_level"] == 1.0 and signal_["current_level"] == 0.0
    assert signal_["baseline_n"] == 7 * PER_DAY and signal_["current_n"] == PER_DAY
    assert summary["drift_runs"][0]["tested"] == len(INTENTS) * 4  # groundedness skipped: no context

    # --- 2. the daemon, killed mid-judging and restarted ----------------------------------------------
    webhook = Webhook()
    config = _daemon_config(tmp_path / "daemon.toml", daemon_lake, webhook.url)
    log = tmp_path / "daemon.log"
    daemon = _start_daemon(config, log)
    started = [daemon]
    try:
        _wait(lambda: (_state(daemon_lake, "SELECT count(*) FROM judgment_attempts") or [(0,)])[0][0] >= 150,
              120, "the daemon to start judging")
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(30)
        killed_at = _state(daemon_lake, "SELECT count(*) FROM judgment_attempts")[0][0]
        assert killed_at < len(INTENTS) * DAYS * PER_DAY, "judging finished before the kill"

        second = _start_daemon(config, log)
        started.append(second)
        _wait(lambda: log.read_text().count("verdict-daemon ready") == 2, 60, "the restarted daemon")
        duplicate = _start_daemon(config, log)  # one daemon per data dir
        started.append(duplicate)
        assert duplicate.wait(60) == 2
        total = len(INTENTS) * DAYS * PER_DAY
        _wait(lambda: _state(daemon_lake, "SELECT count(*) FROM judgment_attempts")[0][0] >= total
              and webhook.received
              and _state(daemon_lake, "SELECT max(judgments) FROM drift_runs")[0][0] == total * 4, 180,
              "judging, drift and the alert to complete")
        time.sleep(3.5)  # further drift and alert ticks must not alert again
        second.send_signal(signal.SIGTERM)
        try:
            assert second.wait(90) == 0
        except subprocess.TimeoutExpired:
            second.send_signal(signal.SIGUSR1)  # dump the daemon's threads into its log
            time.sleep(1)
            raise AssertionError("the daemon did not stop on SIGTERM:\n" + log.read_text()[-6000:]) from None
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    logs = log.read_text()
    assert "already_running" in logs and "Traceback" not in logs

    attempts = _state(daemon_lake, "SELECT count(*), count(DISTINCT trace_id), max(attempt_no) FROM judgment_attempts")
    assert attempts == [(total, total, 1)]  # no duplicate judgments across the kill
    runs = _state(daemon_lake, "SELECT r.run_id, r.signals, count(s.signal_id) FROM drift_runs r "
                               "LEFT JOIN drift_signals s USING (tenant_id, run_id) GROUP BY ALL")
    assert runs and all(declared == stored for _run, declared, stored in runs)  # no partial run
    latest = _state(daemon_lake, "SELECT s.cluster, s.dimension, s.kind FROM drift_signals s WHERE s.run_id = "
                                 "(SELECT run_id FROM drift_runs WHERE tenant_id = ? ORDER BY completed_at DESC "
                                 "LIMIT 1)", [TENANT])
    assert latest == [(CORRUPTED, "completeness", "regression")]
    keys = [key for key, _body in webhook.received]
    assert len(keys) == len(set(keys)) == 1
    body = webhook.received[0][1]
    assert (body["tenant_id"], body["cluster"], body["dimension"], body["kind"]) == \
        (TENANT, CORRUPTED, "completeness", "regression")
    assert _state(daemon_lake, "SELECT status, attempts FROM alert_deliveries") == [("delivered", 1)]
