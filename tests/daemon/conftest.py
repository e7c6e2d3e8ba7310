"""Fixtures: a span lake with 9 synthetic days (4 intents, one truncated on the last day) and configs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.daemon.lakes import synthetic_days, write_rows
from verdict_daemon.config import DaemonConfig, parse_config

NOW = datetime(2026, 11, 20, 0, 0, tzinfo=UTC)
INTENTS = ("billing.v1", "search.v1", "returns.v1", "account.v1")
JUDGE_MODEL = "tests.daemon.lakes:scripted_judge_model"


def make_config(data_dir: Path, **sections) -> DaemonConfig:
    doc = {"data_dir": str(data_dir), "tenants": [{"id": "acme"}, {"id": "globex"}],
           "sampling": {"per_cluster_per_window": 40},
           "evaluators": [{"name": "quality", "kind": "rubric", "model": JUDGE_MODEL}], **sections}
    return parse_config(doc)


@pytest.fixture
def lake(tmp_path) -> Path:
    data = tmp_path / "data"
    write_rows(data, "acme", synthetic_days(NOW, intents=INTENTS, per_day=40, corrupt="search.v1"))
    return data
