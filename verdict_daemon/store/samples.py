"""Sampled traces in state.duckdb: the only SQL for them (service/sampling.py picks, this module stores).

The picks already held are handed to the sampler as an Arrow table, joined there in DuckDB against the
lake's candidates (no Python row loop); new picks arrive as frozen `SampledTrace`s and are inserted in
one transaction (INSERT OR IGNORE: a pick is never withdrawn nor stored twice).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, cast

from verdict.tenancy import TenantId
from verdict_daemon.store.state import StateStore, insert_rows

if TYPE_CHECKING:
    import pyarrow

# The judged units of a `sampled_traces` row (its `unit` column). A conversation unit's trace id is
# `conversation:<first trace id>`: its first turn's trace identifies a closed conversation for good, and the prefix
# keeps it apart from the turn rows of the same traces (service/conversation.py). Defined here, with the rows, so
# the store's own SQL (the registry's clusters of conversation units: store/clusters.py) and the service read one
# rule.
TURN = "turn"  # the judged unit of a trace (a turn, an agent run, a single call)
CONVERSATION = "conversation"  # a closed conversation as a whole
UNIT_PREFIX = "conversation:"


def unit_id(first_trace_id: str) -> str:
    """The `sampled_traces.trace_id` of a conversation unit, from its first turn's trace."""
    return UNIT_PREFIX + first_trace_id


def judged_trace(trace_id: str) -> str:
    """The lake trace a judged unit's results belong to: a conversation's first turn, or the trace itself."""
    return trace_id.removeprefix(UNIT_PREFIX)


def judged_trace_sql(row: str) -> str:
    """`judged_trace` of the `sampled_traces` row aliased `row`, in SQL."""
    return (f"CASE WHEN {row}.unit = '{CONVERSATION}' THEN substr({row}.trace_id, {len(UNIT_PREFIX) + 1}) "
            f"ELSE {row}.trace_id END")


@dataclass(frozen=True)
class SampledTrace:
    """A `sampled_traces` row (its columns, in order; times naive UTC)."""

    tenant_id: TenantId
    trace_id: str
    span_id: str
    intent_key: str | None
    stratum: str
    window_start: datetime
    started_at: datetime
    query: str
    response: str
    context: str
    sampled_at: datetime
    # The conversation so far and the tool trajectory, or a conversation unit's turns (material.background_json)
    history: str | None = None
    unit: str = TURN  # or CONVERSATION: a closed conversation judged as a whole (service/conversation.py)


_COLUMNS = tuple(f.name for f in fields(SampledTrace))
_ROW = attrgetter(*_COLUMNS)


def picks_since(store: StateStore, tenant: TenantId, since: datetime, unit: str = TURN) -> pyarrow.Table:
    """(trace_id, stratum, window_start) of the tenant's picks of one unit in windows starting at `since` or later."""
    with store.transaction() as con:
        return cast("pyarrow.Table", con.sql(
            "SELECT trace_id, stratum, window_start FROM sampled_traces WHERE tenant_id = ? AND window_start >= ? "
            "AND unit = ?", params=[tenant, since, unit]).to_arrow_table())


def insert_samples(store: StateStore, samples: list[SampledTrace]) -> None:
    """Store new picks in one short transaction."""
    if samples:
        with store.transaction() as con:
            insert_rows(con, "sampled_traces", _COLUMNS, [_ROW(s) for s in samples])
