"""`/traffic`: the app's own model calls per day, model and intent (the real app over the real lake, as in
test_app.py), checked against `verdict sql`'s llm_calls and the list prices."""

from __future__ import annotations

import json
import re

import pytest

from collector.sql import execute
from verdict.models.pricing import PriceTable


def sql(lake, tenant: str, query: str) -> list[tuple]:
    return execute(lake.data_dir, tenant, query)[1]


def test_traffic_per_model_and_intent_matches_the_lake(ui, lake):
    days = [r[0] for r in sql(lake, "acme", "SELECT DISTINCT date FROM llm_calls ORDER BY 1 DESC LIMIT 7")]
    expected = {(m, i): (n, e, p95, tin, tout) for m, i, n, e, p95, tin, tout in sql(lake, "acme", f"""
        SELECT coalesce(response_model, request_model), intent_key, count(*),
               count(*) FILTER (status_code = 'ERROR' OR error_type IS NOT NULL), quantile_cont(latency_ms, 0.95),
               coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0)
        FROM llm_calls WHERE date >= DATE '{min(days)}' GROUP BY ALL""")}
    exported = json.loads(ui["acme"].get("/traffic?format=json").text)["rows"]
    got: dict = {}
    for r in exported:
        calls, errors, tin, tout = got.get((r["model"], r["intent"]), (0, 0, 0, 0))
        got[r["model"], r["intent"]] = (calls + r["calls"], errors + r["errors"], tin + r["input_tokens"],
                                        tout + r["output_tokens"])
    assert got == {k: (n, e, tin, tout) for k, (n, e, _, tin, tout) in expected.items()}
    assert {r["day"] for r in exported} == {d.isoformat() for d in days}
    prices = PriceTable.default()
    for r in exported:
        priced = r["model"] is not None and prices.price(r["model"]) is not None
        assert r["cost_usd"] == (pytest.approx(prices.cost(r["model"], r["input_tokens"], r["output_tokens"]))
                                 if priced else None)
    page = ui["acme"].get("/traffic").text
    model, intent = max(expected, key=lambda k: expected[k][0])
    row = re.search(rf'intent={re.escape(intent)}">{re.escape(intent)}</a></td>(.*?)</tr>', page, re.S)
    assert row is not None and f"{expected[model, intent][0]:,}</td>" in row.group(1)
    assert f"{expected[model, intent][2]:,.0f} ms" in row.group(1)  # p95


def test_traffic_filters_and_tenancy(ui, lake):
    acme = ui["acme"]
    intent = sql(lake, "acme", "SELECT min(intent_key) FROM llm_calls")[0][0]
    rows = json.loads(acme.get(f"/traffic?intent={intent}&days=90&format=json").text)["rows"]
    total = sql(lake, "acme", f"SELECT count(*) FROM llm_calls WHERE intent_key = '{intent}'")[0][0]
    assert rows and {r["intent"] for r in rows} == {intent} and sum(r["calls"] for r in rows) == total
    assert acme.get("/traffic?days=5").status_code == 400  # the listed choices only
    mine = sum(r["calls"] for r in json.loads(ui["umbrella"].get("/traffic?days=90&format=json").text)["rows"])
    assert mine == sql(lake, "umbrella", "SELECT count(*) FROM llm_calls")[0][0]
    assert "No model call matches" in acme.get("/traffic?model=no-such-model").text
