"""Test helpers: the peer recordings (tests/fixtures/dialects) replayed through the real collector process, one
tenant per sender, then sampled by the real sampler and judged by a rubric evaluator built from the config whose
scripted judge model (the only stand-in) records every request, so a test reads exactly what the judge was shown."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import duckdb

from collector.views import open_scoped
from tests.collector.conftest import replay_recordings
from tests.daemon.lakes import grade
from verdict.models.scripted import ScriptedModel
from verdict.tenancy import validate_tenant_id
from verdict_daemon.config import EvaluatorConfig, Judging, Sampling
from verdict_daemon.service.cycle import build_evaluator
from verdict_daemon.service.judging import judge
from verdict_daemon.service.sampling import sample
from verdict_daemon.store.state import StateStore

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dialects"


def replay_fixtures(data_dir: Path, senders: tuple[str, ...], request) -> Path:
    """The data dir after each sender's recording landed, in its arrival order, in its own tenant."""
    manifests = {sender: json.loads((FIXTURES / sender / "manifest.json").read_text()) for sender in senders}
    return replay_recordings(data_dir, {sender: [FIXTURES / sender / name for name in manifests[sender]["arrival_order"]]
                                        for sender in senders}, request)


def recording_judge() -> ScriptedModel:
    """The judge model `build_evaluator` resolves ('module:attribute'): the inspecting rubric judge, recording."""
    return ScriptedModel(grade, name="scripted/inspecting-judge", record=True)


RECORDING_JUDGE = f"{__name__}:recording_judge"  # as an evaluator's `model`


def sampled(lake: Path, sender: str) -> StateStore:
    """The state store once the sender's traces are sampled (their windows closed; again: nothing new)."""
    tenant = validate_tenant_id(sender)
    con = open_scoped(lake, tenant)
    last = con.execute("SELECT max(end_time) FROM spans").fetchone()[0]
    con.close()
    store = StateStore(lake)
    sample(store, lake, tenant, Sampling(per_cluster_per_window=10), last + timedelta(days=2))
    return store


def judged(lake: Path, sender: str, trajectory_steps: int,
           history_tokens: int = 0) -> tuple[list[str | None], list[str]]:
    """Sample the sender's two traces (their windows closed) and judge them with a rubric evaluator showing up to
    `trajectory_steps` steps and `history_tokens` of a turn's conversation so far: the stored backgrounds and, per
    judged trace, every message text its judge read."""
    tenant = validate_tenant_id(sender)
    store = sampled(lake, sender)
    evaluator = build_evaluator(EvaluatorConfig(name="quality", kind="rubric", model=RECORDING_JUDGE),
                                history_tokens, trajectory_steps)
    report = judge(store, tenant, evaluator, Judging(concurrency=1), f"run-{sender}-{trajectory_steps}")
    assert (report.judged, report.errors) == (2, 0), report
    con = duckdb.connect(str(store.path), read_only=True)
    stored = [h for (h,) in con.execute("SELECT history FROM sampled_traces WHERE tenant_id = ? ORDER BY query",
                                         [tenant]).fetchall()]
    con.close()
    prompts = sorted("\n".join(m.content for m in r.messages)
                     for r in evaluator.judge.model.requests)  # type: ignore[attr-defined]  # a JudgeEvaluator's Judge
    return stored, prompts
