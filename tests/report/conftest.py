"""A realistic state.duckdb for report tests, produced by the real pipeline (sample → judge → assign →
drift, plus the sentinel check) over a span lake written with the collector's own segment writer.

Tenant `acme`: 4 intents × 9 days × 40 traces; `search.v1` is truncated on the last day (a regression
for both evaluators: the noisy rubric judge `quality` and the graph `format`) and its most recent
traces carry markup and an e-mail address in the conversation (escaping and redaction). Tenant `globex` has spans but nothing judged (every panel's empty state).
Tenant `umbrella` runs the same pipeline with the same evaluators (so the same fingerprints) on a
smaller lake: any figure of acme's report that leaked another tenant's rows would differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from tests.daemon.conftest import INTENTS, NOW, make_config
from tests.daemon.lakes import span_row, synthetic_days, write_rows
from tests.daemon.test_sentinel import sentinel_file
from tests.probes.scripted import BAD, GOOD, MINI, scripted_judge, scripted_target
from verdict.probes.artifact import write_artifact
from verdict.probes.runner import run_suite
from verdict.tenancy import TenantId
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.service.sentinel_health import HealthGate

JUDGE = "tests.report.judges:report_judge_model"
# A second evaluator, a user judge graph ({complete: bool}): its results must never pool with the rubric's.
GRAPH = {"name": "format", "kind": "graph", "graph": "tests.daemon.graphs:completeness_graph"}
HOSTILE_QUERY = 'Where is my order <img src=x onerror="alert(1)">?'
HOSTILE_ANSWER = "<script>alert('pwned')</script> Mail bob@example.com with your order number and then"


@dataclass(frozen=True)
class Lake:
    data_dir: Path
    summary: dict  # run_cycle's summary for acme
    other: dict  # run_cycle's summary for umbrella


def section(data, name: str):
    """The report section of one evaluator (by name)."""
    [found] = [e for e in data.evaluators if e.name == name]
    return found


def _unique_queries(rows: list[dict]) -> list[dict]:
    """synthetic_days repeats its queries every day; make each trace's query its own (judge noise keys on it)."""
    for row in rows:
        messages = json.loads(row["input_messages"])
        messages[0]["parts"][0]["content"] += f" (ticket {row['trace_id'][:8]})"
        row["input_messages"] = json.dumps(messages)
    return rows


def _hostile_rows() -> list[dict]:
    return [span_row(f"{0xbad0 + i:032x}", NOW - timedelta(minutes=5 + i), intent="search.v1",
                     query=HOSTILE_QUERY, answer=HOSTILE_ANSWER) for i in range(3)]


@pytest.fixture(scope="session")
def lake(tmp_path_factory) -> Lake:
    root = tmp_path_factory.mktemp("report")
    data = root / "data"
    rows = _unique_queries(synthetic_days(NOW, intents=INTENTS, per_day=40, corrupt="search.v1"))
    write_rows(data, "acme", rows + _hostile_rows())
    write_rows(data, "globex", synthetic_days(NOW, intents=("other.v1",), per_day=5, seed=3))
    write_rows(data, "umbrella", _unique_queries(synthetic_days(NOW, intents=INTENTS[:2], per_day=6, seed=5)))
    config = make_config(data, evaluators=[{"name": "quality", "kind": "rubric", "model": JUDGE}, GRAPH],
                         tenants=[{"id": "acme"}, {"id": "globex"}, {"id": "umbrella"}],
                         sentinel={"file": str(sentinel_file(root / "sentinel.jsonl")), "minimum_examples": 6,
                                   "threshold": 0.5})
    evaluators = build_evaluators(config)
    summary = run_cycle(config, TenantId("acme"), NOW, evaluators, gate=HealthGate(config.sentinel, evaluators))
    other = run_cycle(config, TenantId("umbrella"), NOW, evaluators, gate=HealthGate(config.sentinel, evaluators))
    return Lake(data, summary, other)


@pytest.fixture(scope="session")
def probe_runs(tmp_path_factory):
    """Two probe-run artifacts written by the real probe runner (scripted target and judge): one failing
    its gate (sycophancy), one passing. Returns (bad path, good path, bad run, good run)."""
    root = tmp_path_factory.mktemp("probes")
    bad = run_suite(MINI, scripted_target(BAD), scripted_judge(), min_pass_rate=0.5, min_category_pass_rate=0.2)
    good = run_suite(MINI, scripted_target(GOOD), scripted_judge())
    return write_artifact(bad, root / "bad.json"), write_artifact(good, root / "good.json"), bad, good
