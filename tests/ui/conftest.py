"""The UI over a lake built like the report tests' (tests/report/conftest.py): the real pipeline
(sample → judge → assign → drift, sentinel check) over spans written with the collector's segment
writer. Tenants acme and umbrella both have a regression in search.v1 on the last day, so both have
signals, review items and judgments under the same evaluator fingerprints: each is the other tenant
of every isolation test. acme also carries the report tests' hostile content (markup, an e-mail).

`ui` serves acme and umbrella through a token file, as off loopback: each request sees its token's
tenant. `local` serves acme alone, as on loopback without tokens.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from starlette.testclient import TestClient

from collector.auth import TokenStore
from tests.daemon.conftest import INTENTS, NOW, make_config
from tests.daemon.lakes import synthetic_days, write_rows
from tests.daemon.test_sentinel import sentinel_file
from tests.report.conftest import GRAPH, JUDGE, Lake, _hostile_rows, _unique_queries
from verdict.tenancy import TenantId
from verdict_daemon.service.cycle import build_evaluators, run_cycle
from verdict_daemon.service.sentinel_health import HealthGate
from verdict_ui.access import Access
from verdict_ui.app import Settings, create_app

TOKENS = {"acme": "acme-token-0123456789", "umbrella": "umbrella-token-0123456789"}
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@dataclass(frozen=True)
class TenantIds:
    """Ids of one tenant's rows, read straight from state.duckdb (not through the UI)."""

    traces: tuple[str, ...]
    judged_traces: tuple[str, ...]
    signals: tuple[str, ...]
    items: tuple[str, ...]


def tenant_ids(data_dir: Path, tenant: str) -> TenantIds:
    con = duckdb.connect(str(data_dir / "state.duckdb"), read_only=True)
    try:
        def ids(sql: str) -> tuple[str, ...]:
            return tuple(r[0] for r in con.execute(sql, {"t": tenant}).fetchall())

        return TenantIds(ids("SELECT trace_id FROM sampled_traces WHERE tenant_id = $t ORDER BY trace_id"),
                         ids("SELECT DISTINCT trace_id FROM judgment_attempts WHERE tenant_id = $t ORDER BY 1"),
                         ids("SELECT DISTINCT signal_id FROM drift_signals WHERE tenant_id = $t ORDER BY 1"),
                         ids("SELECT item_id FROM review_items WHERE tenant_id = $t ORDER BY item_id"))
    finally:
        con.close()


def csrf_of(page: str) -> str:
    found = CSRF.search(page)
    assert found is not None, page
    return found.group(1)


@pytest.fixture(scope="session")
def token_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tokens") / "tokens.yaml"
    path.write_text("".join(f'"{token}": {tenant}\n' for tenant, token in TOKENS.items()))
    return path


def client(data_dir: Path, access: Access, hosts=("testserver",)) -> TestClient:
    return TestClient(create_app(Settings(data_dir, access, hosts)), follow_redirects=False)


@pytest.fixture(scope="session")
def lake(tmp_path_factory) -> Lake:
    root = tmp_path_factory.mktemp("ui")
    data = root / "data"
    for tenant, seed, extra in (("acme", 0, _hostile_rows()), ("umbrella", 5, [])):
        rows = _unique_queries(synthetic_days(NOW, intents=INTENTS, per_day=40, corrupt="search.v1", seed=seed))
        write_rows(data, tenant, rows + extra)
    config = make_config(data, evaluators=[{"name": "quality", "kind": "rubric", "model": JUDGE}, GRAPH],
                         tenants=[{"id": "acme"}, {"id": "umbrella"}],
                         sentinel={"file": str(sentinel_file(root / "sentinel.jsonl")), "minimum_examples": 6,
                                   "threshold": 0.5})
    evaluators = build_evaluators(config)
    summaries = [run_cycle(config, TenantId(t), NOW, evaluators, gate=HealthGate(config.sentinel, evaluators))
                 for t in ("acme", "umbrella")]
    return Lake(data, *summaries)


@pytest.fixture(scope="session")
def small_lake(tmp_path_factory) -> Path:
    """A data dir whose tenant umbrella has 6 traces a day over two intents: every drift cell stays below
    min_usable (30) in the one-day current window."""
    data = tmp_path_factory.mktemp("ui-small") / "data"
    write_rows(data, "umbrella", _unique_queries(synthetic_days(NOW, intents=INTENTS[:2], per_day=6, seed=5)))
    config = make_config(data, evaluators=[{"name": "quality", "kind": "rubric", "model": JUDGE}],
                         tenants=[{"id": "umbrella"}])
    run_cycle(config, TenantId("umbrella"), NOW, build_evaluators(config))
    return data


@pytest.fixture
def data_dir(lake, tmp_path) -> Path:
    """A copy of the lake for a test that writes labels (the session's lake stays as built)."""
    return shutil.copytree(lake.data_dir, tmp_path / "data")


@pytest.fixture
def ui(lake, token_file):
    """A client per tenant on one server (token mode) over the session's lake: read-only tests."""
    return clients(lake.data_dir, token_file)


@pytest.fixture
def writable_ui(data_dir, token_file):
    """Like `ui`, over a copy of the lake that the test may label."""
    return clients(data_dir, token_file)


def clients(data_dir: Path, token_file: Path) -> dict[str, TestClient]:
    app = create_app(Settings(data_dir, Access.create(None, TokenStore.load(token_file)), ("testserver",)))
    return {t: TestClient(app, follow_redirects=False, headers={"Authorization": f"Bearer {token}"})
            for t, token in TOKENS.items()}


@pytest.fixture(scope="session")
def ids(lake):
    return {t: tenant_ids(lake.data_dir, t) for t in TOKENS}


def state_rows(data_dir: Path, sql: str, **params) -> list[tuple]:
    con = duckdb.connect(str(data_dir / "state.duckdb"), read_only=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()

def signal_with_items(data_dir, tenant: str, queued: bool) -> tuple[str, set[str]]:
    """A signal of `tenant` (a regression if one fits) whose stored example traces have (queued) or have no review
    item, and those items."""
    rows = state_rows(data_dir, """
        SELECT s.signal_id, list(i.item_id) FILTER (WHERE i.item_id IS NOT NULL)
        FROM drift_signals s LEFT JOIN review_items i ON i.tenant_id = s.tenant_id
             AND list_contains(from_json(s.examples, '["VARCHAR"]'), i.trace_id)
        WHERE s.tenant_id = $t GROUP BY s.signal_id, s.kind ORDER BY s.kind <> 'regression', s.signal_id""", t=tenant)
    signal, items = next((s, i) for s, i in rows if bool(i) == queued)
    return signal, set(items or ())


def start_server(data_dir: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """`verdict ui` as a user starts it (port 0: it picks a free one and prints the URL)."""
    process = subprocess.Popen([sys.executable, "-m", "verdict_daemon.cli", "ui", "--data-dir", str(data_dir),
                                "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None  # piped
    line = process.stdout.readline()
    match = re.search(r"at (http://127\.0\.0\.1:\d+)/", line)
    if match is None:
        process.kill()
        pytest.fail(f"verdict ui printed no URL: {line!r} {process.communicate(timeout=30)[1][-2000:]}")
    return process, match.group(1)


@contextlib.contextmanager
def serving(data_dir: Path, tenant: str = "acme") -> Iterator[str]:
    """The real server for `tenant` over `data_dir`, stopped on leaving; its URL."""
    process, url = start_server(data_dir, "--tenant", tenant)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def server(data_dir):
    """The real server for tenant acme over a copy of the lake; its URL."""
    with serving(data_dir) as url:
        yield url
