"""`/traffic`: the app's own model calls per day, model and intent (the real app over the real lake, as in
test_app.py), checked against `verdict sql`'s llm_calls and the list prices."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

from collector.sql import execute
from tests.daemon.conftest import NOW
from tests.daemon.lakes import span_row, write_rows
from tests.ui.conftest import client
from verdict.models.pricing import PriceTable
from verdict.tenancy import TenantId
from verdict_ui.access import Access


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


@pytest.fixture(scope="module")
def varied(tmp_path_factory):
    """A span lake (no state) of one tenant whose calls differ in latency, tokens, status and model: a priced
    gpt-4o-mini on search.v1 (5 calls on the last day, one failed) and an unpriced local model on chat.v1."""
    data = tmp_path_factory.mktemp("traffic") / "data"
    day = NOW.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    rows = []
    for i, ms in enumerate((10, 20, 30, 40, 1000)):
        row = span_row(f"{0xa0 + i:032x}", day + timedelta(hours=1, minutes=i), intent="search.v1", query="q", answer="a",
                       status="ERROR" if i == 4 else "UNSET")
        row.update(duration_ns=ms * 1_000_000, end_time=row["start_time"] + ms * 1_000_000, input_tokens=100,
                   output_tokens=50)
        rows.append(row)
    for i in range(3):
        row = span_row(f"{0xb0 + i:032x}", day - timedelta(days=1, hours=-i), intent="chat.v1", query="q", answer="a")
        row.update(request_model="llama-local", input_tokens=10, output_tokens=10)
        rows.append(row)
    write_rows(data, "globex", rows)
    return data


def test_traffic_figures_of_varied_calls(varied):
    app = client(varied, Access.create(TenantId("globex"), None))
    rows = {(r["model"], r["intent"], r["day"]): r for r in json.loads(app.get("/traffic?format=json").text)["rows"]}
    search = next(r for (m, i, _), r in rows.items() if i == "search.v1")
    assert (search["calls"], search["errors"], search["p50_ms"]) == (5, 1, 30)
    assert search["p95_ms"] == pytest.approx(40 + 0.8 * 960)  # linear interpolation between 40 and 1000 ms
    assert search["cost_usd"] == pytest.approx((500 * 0.15 + 250 * 0.60) / 1e6)  # gpt-4o-mini's list price
    local = next(r for (m, i, _), r in rows.items() if i == "chat.v1")
    assert local["model"] == "llama-local" and local["cost_usd"] is None and local["calls"] == 3
    page = app.get("/traffic").text
    assert "20.0 % (1)" in page and "808 ms" in page and "500 in / 250 out" in page
    assert re.search(r'model=llama-local">llama-local</a>.*?<td data-label="Cost \(list price\)">—</td>', page, re.S)
    assert app.get("/traffic?days=1&format=json").json()["rows"] == [search]  # the newest day only
