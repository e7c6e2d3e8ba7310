"""A real state.duckdb made by a real monitoring cycle: a 9-day lake for `acme` (and a little for
`globex`), sampled and judged by a rubric judge that is sometimes UNCLEAR and a three-judge ensemble
whose members sometimes disagree (two of three then fail safety), with the hard cases routed into the review queue."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.daemon.conftest import INTENTS, NOW
from tests.daemon.lakes import synthetic_days, write_rows
from verdict.tenancy import TenantId
from verdict_daemon.config import DaemonConfig, parse_config
from verdict_daemon.service.cycle import build_evaluators, run_cycle

MODELS = "tests.review.models"


def review_config(data_dir: Path, **review) -> DaemonConfig:
    return parse_config({
        "data_dir": str(data_dir), "tenants": [{"id": "acme"}, {"id": "globex"}],
        "sampling": {"per_cluster_per_window": 2},
        "judging": {"concurrency": 4},
        "evaluators": [
            {"name": "single", "kind": "rubric", "model": f"{MODELS}:hesitant"},
            {"name": "panel", "kind": "ensemble",
             "models": [f"{MODELS}:contrarian", f"{MODELS}:inspecting", f"{MODELS}:contrarian"]}],
        "review": {"audit_rate": 0.0, **review},
        # No conversations here; history off keeps the evaluators' fingerprints, so the seeded audit draw (it hashes
        # attempt ids, which hash the fingerprint) picks the items these tests' numbers were worked out for.
        "conversations": {"history_tokens": 0}})


@pytest.fixture(scope="session")
def _judged_template(tmp_path_factory) -> Path:
    """Built once per session (judging is the slow part); tests work on copies."""
    data = tmp_path_factory.mktemp("review") / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=INTENTS, per_day=40))
    write_rows(data, "globex", synthetic_days(NOW, intents=INTENTS[:1], per_day=5, days=2, seed=3))
    config = review_config(data)
    evaluators = build_evaluators(config)
    for tenant in ("acme", "globex"):
        run_cycle(config, TenantId(tenant), NOW, evaluators)
    return data


@pytest.fixture
def judged(_judged_template, tmp_path) -> Path:
    """A private copy of the judged data dir (lake + state.duckdb)."""
    data = tmp_path / "data"
    shutil.copytree(_judged_template, data)
    return data
