"""The demo's claim over many seeds, without processes: for every seed and every choice of corrupted
intent, the real DriftDetector flags that intent's completeness and no other intent.

The pieces are the demo's own (scenario traffic, the fake LLM's handler, redaction, the offline
judge's checks, the UTC days and their spread, the closing decision's window); only the transport (HTTP, OTLP, collector, daemon) is skipped, which
the end-to-end test covers for the default seed.
"""

from __future__ import annotations

import random
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from verdict.redact import redact_text
from verdict_daemon.config import parse_config
from verdict_daemon.service.drift_runs import plan
from verdict_demo.app import SPREAD_HOURS
from verdict_demo.backdating import day_noon
from verdict_demo.fake_llm import RecordedRequest
from verdict_demo.judge import CHECKS, Material, grade
from verdict_demo.llm import SupportLLM
from verdict_demo.orchestrator import daemon_config
from verdict_demo.scenario import INTENTS, MIN_PER_DAY, Scenario

pytestmark = pytest.mark.slow


def _signals(scenario: Scenario) -> list[tuple[str, str]]:
    import pyarrow as pa

    llm = SupportLLM(scenario)
    # The demo's closing decision: the drift look at today 00:00 UTC, the last simulated day yesterday.
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    rows: dict[str, list] = {k: [] for k in ("started_at", "trace_id", "cluster", "dimension", "value", "fingerprint")}
    spread = random.Random(scenario.seed)
    for day in range(scenario.days):
        llm.regressed = day >= scenario.regression.day
        for n, request in enumerate(scenario.day_traffic(day)):
            body = {"messages": [{"role": "system", "content": request.intent.system_prompt},
                                 {"role": "user", "content": request.question.text}], "user": request.customer}
            answer = llm(RecordedRequest("POST", "/v1/chat/completions", {}, body, b"", 0.0)).text
            material = Material(redact_text(request.question.text), request.intent.system_prompt, redact_text(answer))
            at = day_noon(day, scenario.days, today) + timedelta(hours=spread.uniform(-SPREAD_HOURS, SPREAD_HOURS))
            for dimension in CHECKS:
                for column, value in zip(rows, (at, f"{day}-{n}", request.intent.key, dimension,
                                                grade(dimension, material).verdict, "fp"), strict=True):
                    rows[column].append(value)
    # The drift settings of the demo's generated daemon config (windows fitted to the simulated days).
    config = parse_config(tomllib.loads(daemon_config(Path("."), scenario, "offline/heuristic-judge")))
    (closing,) = plan(config.drift, today.replace(tzinfo=None), [])  # on the grid: the closing decision's level
    report = config.drift.detector(closing.alpha).detect(pa.table(rows), now=today)
    return [(c.cluster, c.dimension) for c in report.cells if c.is_signal]


@pytest.mark.parametrize("seed", range(8))
def test_only_the_corrupted_intent_is_flagged_whatever_the_seed(seed):
    for chosen in INTENTS:
        signals = _signals(Scenario(per_day=MIN_PER_DAY, seed=seed, corrupted_intent=chosen.key))
        assert (chosen.key, "completeness") in signals, (seed, chosen.key, signals)
        assert {cluster for cluster, _ in signals} == {chosen.key}, (seed, chosen.key, signals)
