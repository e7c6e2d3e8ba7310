"""The application's own traffic, from the span lake's model calls (`llm_calls`): per day, model and intent,
the calls, latency p50/p95, tokens, cost at list prices (verdict.models.pricing) and error rate.

One grouping-sets query over the newest `days` date partitions (date literals, so other partitions' files
are pruned) gives the three views: per day, per model and intent, and per day × model × intent (the export).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from verdict.models.pricing import PriceTable
from verdict_ui import params

DAY_CHOICES = ("1", "7", "14", "30", "90")
ERROR = "(status_code = 'ERROR' OR error_type IS NOT NULL)"  # OTel error status, or the error.type attribute


@dataclass(frozen=True)
class TrafficFilter:
    days: int = 7
    model: str | None = None
    intent: str | None = None

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> TrafficFilter:
        return cls(int(params.choice(query, "days", DAY_CHOICES, "7") or 7), params.text(query, "model"),
                   params.text(query, "intent"))


@dataclass(frozen=True)
class TrafficRow:
    day: date | None  # None: over every day shown
    model: str | None  # None with `intent` None: every model and intent
    intent: str | None
    calls: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: no call of the row has a list price (a local model, say)

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class Traffic:
    days: tuple[date, ...]  # the date partitions read, newest first
    by_day: tuple[TrafficRow, ...]  # newest first
    by_model_intent: tuple[TrafficRow, ...]  # most calls first
    detail: tuple[TrafficRow, ...]  # day × model × intent


_QUERY = f"""
    SELECT grouping(date, model, intent_key) AS level, date, model, intent_key, count(*), count(*) FILTER ({ERROR}),
           quantile_cont(latency_ms, 0.5), quantile_cont(latency_ms, 0.95), coalesce(sum(input_tokens), 0),
           coalesce(sum(output_tokens), 0)
    FROM (SELECT *, coalesce(response_model, request_model) AS model FROM llm_calls WHERE {{where}})
    GROUP BY GROUPING SETS ((date, model, intent_key), (date), (model, intent_key))"""


def traffic(cur, f: TrafficFilter, days: tuple[date, ...], prices: PriceTable | None = None) -> Traffic:
    read = days[:f.days]
    if not read:
        return Traffic((), (), (), ())
    where = [f"date IN ({', '.join(f'DATE {d.isoformat()!r}' for d in read)})"]
    args: dict[str, str] = {}
    if f.model:
        where.append("coalesce(response_model, request_model) = $model")
        args["model"] = f.model
    if f.intent:
        where.append("intent_key = $intent")
        args["intent"] = f.intent
    rows = cur.execute(_QUERY.format(where=" AND ".join(where)), args).fetchall()
    table = prices or PriceTable.default()
    detail = [_row(r, r[1], r[2], r[3], _cost(table, r[2], r[8], r[9])) for r in rows if r[0] == 0]
    day_cost: dict[date, float] = {}  # a group's cost: the sum of its priced day × model × intent rows
    pair_cost: dict[tuple[str | None, str | None], float] = {}
    for d in detail:
        if d.cost_usd is not None and d.day is not None:
            day_cost[d.day] = day_cost.get(d.day, 0.0) + d.cost_usd
            pair_cost[d.model, d.intent] = pair_cost.get((d.model, d.intent), 0.0) + d.cost_usd
    by_day = [_row(r, r[1], None, None, day_cost.get(r[1])) for r in rows if r[0] == 0b011]
    by_model_intent = [_row(r, None, r[2], r[3], pair_cost.get((r[2], r[3])))
                       for r in rows if r[0] == 0b100]  # grouping(): a set bit is a column summed over
    return Traffic(read, tuple(sorted(by_day, key=lambda r: r.day or date.min, reverse=True)),
                   tuple(sorted(by_model_intent, key=lambda r: (-r.calls, r.model or "", r.intent or ""))),
                   tuple(sorted(detail, key=lambda r: (r.day or date.min, r.model or "", r.intent or ""), reverse=True)))


def _row(r: tuple, day: date | None, model: str | None, intent: str | None, cost: float | None) -> TrafficRow:
    """A row of _QUERY (level, date, model, intent, calls, errors, p50, p95, tokens in, out) as shown."""
    return TrafficRow(day, model, intent, r[4], r[5], r[6], r[7], r[8], r[9], cost)


def _cost(prices: PriceTable, model: str | None, input_tokens: int, output_tokens: int) -> float | None:
    if model is None or prices.price(model) is None:
        return None
    return prices.cost(model, input_tokens, output_tokens)
