"""`verdict sql` tables over state.duckdb, scoped to one tenant: judgments, drift_runs, drift_signals,
review_items, review_labels.

`add_state_views(con, data_dir, tenant)` copies the tenant's rows into temporary tables of an
(in-memory) DuckDB connection and detaches the state file again, so user SQL can never reach another
tenant's rows nor hold the daemon's file. Call it before the connection's configuration is locked
(the collector's `open_scoped` locks it). Join to `llm_calls` / `spans` on `trace_id`.

- judgments: one row per trace × dimension of the latest attempt per (trace, evaluator fingerprint);
  a latest ERROR attempt is one row with dimension NULL, value 'ERROR', its error_code and, in reason,
  what was wrong (with the unusable reply, redacted, when there was one); a trace with nothing to judge
  likewise, value 'NO_CONTENT' (error_code no_content).
- drift_runs: every completed run (readers usually want the latest per fingerprint).
- drift_signals: each run's signals, with the run's as_of.
- review_items: the human review queue (verdict_daemon.review), with the evaluator's name.
- review_labels: every reviewer label record (immutable; a relabel is the next revision) with the
  item's trace_id and evaluator; `latest` marks the revision in force per (item, dimension).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from verdict.cli_errors import ErrorCode
from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.store.drift_runs import LATEST_RUN_IDS
from verdict_daemon.store.state import MIGRATIONS, STATE_FILE, is_lock_conflict

STATE_ALIAS = "verdict_state_snapshot"  # where state.duckdb is attached (read-only, detached again)

JUDGMENTS = f"""
CREATE TEMP TABLE judgments AS
WITH latest AS (
    SELECT a.* FROM {STATE_ALIAS}.judgment_attempts a
    WHERE a.tenant_id = $tenant
    QUALIFY row_number() OVER (PARTITION BY a.trace_id, a.fingerprint ORDER BY a.attempt_no DESC) = 1)
SELECT l.tenant_id, l.trace_id, s.started_at, s.intent_key, c.cluster, e.name AS evaluator, l.fingerprint,
       v.dimension, CASE WHEN l.status IN ('ERROR', 'NO_CONTENT') THEN l.status ELSE v.value END AS value, v.score,
       CASE WHEN l.status IN ('ERROR', 'NO_CONTENT') THEN l.error_message ELSE v.reason END AS reason,
       l.status, l.error_code, l.attempt_no, l.judged_at, {{unit}} AS unit
FROM latest l
JOIN {STATE_ALIAS}.sampled_traces s ON s.tenant_id = l.tenant_id AND s.trace_id = l.trace_id
LEFT JOIN {STATE_ALIAS}.cluster_assignments c ON c.tenant_id = l.tenant_id AND c.trace_id = l.trace_id
LEFT JOIN {STATE_ALIAS}.evaluators e ON e.tenant_id = l.tenant_id AND e.fingerprint = l.fingerprint
LEFT JOIN {STATE_ALIAS}.dimension_verdicts v ON v.tenant_id = l.tenant_id AND v.attempt_id = l.attempt_id
"""
DRIFT_RUNS = f"""
CREATE TEMP TABLE drift_runs AS
SELECT r.*, e.name AS evaluator FROM {STATE_ALIAS}.drift_runs r
LEFT JOIN {STATE_ALIAS}.evaluators e USING (tenant_id, fingerprint) WHERE r.tenant_id = $tenant
"""
DRIFT_SIGNALS = f"""
CREATE TEMP TABLE drift_signals AS
SELECT s.*, r.as_of, e.name AS evaluator FROM {STATE_ALIAS}.drift_signals s
JOIN {STATE_ALIAS}.drift_runs r USING (tenant_id, run_id)
LEFT JOIN {STATE_ALIAS}.evaluators e ON e.tenant_id = s.tenant_id AND e.fingerprint = s.fingerprint
WHERE s.tenant_id = $tenant
"""
REVIEW_ITEMS = f"""
CREATE TEMP TABLE review_items AS
SELECT i.tenant_id, i.item_id, i.trace_id, e.name AS evaluator, i.fingerprint, i.reasons, i.flagged, i.queued_at
FROM {STATE_ALIAS}.review_items i
LEFT JOIN {STATE_ALIAS}.evaluators e ON e.tenant_id = i.tenant_id AND e.fingerprint = i.fingerprint
WHERE i.tenant_id = $tenant
"""
REVIEW_LABELS = f"""
CREATE TEMP TABLE review_labels AS
SELECT l.tenant_id, l.item_id, i.trace_id, e.name AS evaluator, i.fingerprint, l.dimension, l.revision, l.label,
       l.critique, l.reviewer, l.labelled_at,
       l.revision = max(l.revision) OVER (PARTITION BY l.item_id, l.dimension) AS latest
FROM {STATE_ALIAS}.review_labels l
JOIN {STATE_ALIAS}.review_items i ON i.tenant_id = l.tenant_id AND i.item_id = l.item_id
LEFT JOIN {STATE_ALIAS}.evaluators e ON e.tenant_id = i.tenant_id AND e.fingerprint = i.fingerprint
WHERE l.tenant_id = $tenant
"""

# What a report reads besides the views (verdict_daemon/report/gather.py), per tenant: aggregates and ids only.
# sampled_per_cluster's cluster is NULL for traces the assign step has not placed yet; its unit is the sampled row's
# (turn or conversation).
REPORT_TABLES = (
    f"""CREATE TEMP TABLE sampled_per_cluster AS
        SELECT c.cluster, {{unit}} AS unit, count(*) AS sampled
        FROM {STATE_ALIAS}.sampled_traces s
        LEFT JOIN {STATE_ALIAS}.cluster_assignments c ON c.tenant_id = s.tenant_id AND c.trace_id = s.trace_id
        WHERE s.tenant_id = $tenant GROUP BY ALL""",
    f"""CREATE TEMP TABLE spend AS
        SELECT coalesce(e.name, a.fingerprint[:12]) AS evaluator, a.fingerprint, count(*) AS attempts,
               count(*) FILTER (WHERE a.status = 'ERROR') AS errors,
               coalesce(sum(a.input_tokens), 0) AS input_tokens, coalesce(sum(a.output_tokens), 0) AS output_tokens,
               coalesce(sum(a.cost_usd), 0) AS cost_usd, sum(a.requests) AS requests,
               round(sum(a.requests) / nullif(count(a.requests) FILTER (WHERE a.status <> 'NO_CONTENT'), 0), 2)
                   AS requests_per_attempt
        FROM {STATE_ALIAS}.judgment_attempts a
        LEFT JOIN {STATE_ALIAS}.evaluators e ON e.tenant_id = a.tenant_id AND e.fingerprint = a.fingerprint
        WHERE a.tenant_id = $tenant GROUP BY ALL""",
    f"""CREATE TEMP TABLE spend_days AS
        SELECT judged_at::DATE AS day, coalesce(sum(input_tokens), 0) AS input_tokens,
               coalesce(sum(output_tokens), 0) AS output_tokens, coalesce(sum(cost_usd), 0) AS cost_usd
        FROM {STATE_ALIAS}.judgment_attempts WHERE tenant_id = $tenant GROUP BY ALL""",
    f"""CREATE TEMP TABLE sentinel AS
        SELECT evaluator, fingerprint, status, reason, examples, usable, errors, passed, pass_rate, pass_rate_low,
               pass_rate_high, threshold, minimum_examples, sentinel_file, checked_at,
               count(*) OVER (PARTITION BY fingerprint) AS checks
        FROM {STATE_ALIAS}.sentinel_health WHERE tenant_id = $tenant
        QUALIFY row_number() OVER (PARTITION BY fingerprint ORDER BY checked_at DESC) = 1""",
    f"""CREATE TEMP TABLE example_content AS
        SELECT trace_id, started_at, query, response FROM {STATE_ALIAS}.sampled_traces
        WHERE tenant_id = $tenant AND trace_id IN (
            SELECT unnest(from_json(examples, '["VARCHAR"]')) FROM drift_signals)""",
)


# The cells of the runs a report shows (store.drift_runs.cells_in); empty, with the same columns, for a state file
# written before drift_cells (attached read-only, so not migrated).
RUN_CELLS = f"""CREATE TEMP TABLE run_cells AS SELECT * FROM {STATE_ALIAS}.drift_cells
                WHERE tenant_id = $tenant AND run_id IN ({LATEST_RUN_IDS})"""
NO_RUN_CELLS = next(s for step in MIGRATIONS for s in step if "CREATE TABLE drift_cells" in s).replace(
    "CREATE TABLE drift_cells", "CREATE TEMP TABLE run_cells")


def add_report_tables(con, state: Path, tenant: TenantId, lock_timeout: float) -> None:
    """Create the tenant's REPORT_TABLES and `run_cells` on `con`, which already holds its `drift_runs` and
    `drift_signals` (add_state_views)."""
    attach_state(con, state, lock_timeout)
    try:
        for statement in REPORT_TABLES:
            con.execute(statement.format(unit=_unit(con)), {"tenant": tenant})
        if "drift_cells" in _attached_tables(con):
            con.execute(RUN_CELLS, {"tenant": tenant})
        else:
            con.execute(NO_RUN_CELLS)
    finally:
        con.execute(f"DETACH {STATE_ALIAS}")


def _unit(con) -> str:
    """The sampled row's unit: its column, or 'turn' for a state file before schema step 12 (attached read-only,
    so not migrated: every row of it is a trace)."""
    (present,) = con.execute("SELECT count(*) FROM duckdb_columns() WHERE database_name = $db AND table_name = "
                             "'sampled_traces' AND column_name = 'unit'", {"db": STATE_ALIAS}).fetchone()
    return "s.unit" if present else "'turn'"


def _attached_tables(con) -> set[str]:
    """The tables of the state file attached as STATE_ALIAS."""
    return {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = $db",
                                      {"db": STATE_ALIAS}).fetchall()}


def attach_state(con, path: Path, lock_timeout: float) -> None:
    """Attach `path` read-only as STATE_ALIAS, retrying while another process holds it (storage_locked past
    `lock_timeout`); the caller DETACHes it again."""
    import duckdb

    quoted = "'" + str(path).replace("'", "''") + "'"
    deadline = time.monotonic() + lock_timeout
    delay = 0.02
    while True:
        try:
            con.execute(f"ATTACH {quoted} AS {STATE_ALIAS} (READ_ONLY)")
            return
        except duckdb.Error as exc:
            left = deadline - time.monotonic()
            if not is_lock_conflict(exc) or left <= 0:
                locked = is_lock_conflict(exc)
                code: ErrorCode = "storage_locked" if locked else "storage_error"
                why = "" if locked else " (damaged, truncated or unreadable)"
                raise DaemonError(code, f"cannot read the state file {path}{why}: {str(exc).splitlines()[0][:200]}") from None
            time.sleep(min(left, delay * (0.5 + random.random())))
            delay = min(delay * 2, 0.5)


def add_state_views(con, data_dir: Path, tenant: TenantId, *, lock_timeout: float = 10.0) -> None:
    """Create the tenant's `judgments`, `drift_runs`, `drift_signals`, `review_items` and `review_labels`
    tables on `con`; a state file that cannot be attached or read is storage_error naming it."""
    import duckdb

    path = Path(data_dir).resolve() / STATE_FILE
    if path.exists():
        attach_state(con, path, lock_timeout)
    else:  # nothing judged yet: empty tables with the real columns
        con.execute(f"ATTACH ':memory:' AS {STATE_ALIAS}")
        # Every step as written (ALTERs and back-fills too) runs against the alias, then the caller's
        # default catalog is restored.
        home, schema = con.execute("SELECT current_database(), current_schema()").fetchone()
        con.execute(f"USE {STATE_ALIAS}")
        try:
            for step in MIGRATIONS:
                for statement in step:
                    con.execute(statement)
        finally:
            con.execute(f'USE "{home}"."{schema}"')
    try:
        present = _attached_tables(con)
        # A file the review migration has not reached (attached read-only, so not migrated): no review tables.
        review = (REVIEW_ITEMS, REVIEW_LABELS) if "review_labels" in present else ()
        for statement in (JUDGMENTS.format(unit=_unit(con)), DRIFT_RUNS, DRIFT_SIGNALS, *review):
            con.execute(statement, {"tenant": tenant})
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):
        raise  # the reader's limits, not the file's fault
    except duckdb.Error as exc:  # a block that fails its checksum: attached fine, read fails
        raise DaemonError("storage_error", f"the state file {path} is damaged (corrupt or truncated): "
                                           f"{str(exc).splitlines()[0][:200]}") from None
    finally:
        con.execute(f"DETACH {STATE_ALIAS}")


# The state tables whose rows mean "the daemon worked for this tenant" (evaluators and cursors alone do not).
_TENANT_TABLES = ("sampled_traces", "judgment_attempts", "sentinel_health", "cluster_versions", "review_items")


def state_tenants(data_dir: Path, lock_timeout: float, tenant: TenantId | None = None) -> set[str]:
    """The tenants (or just `tenant`, when given) with rows in the data dir's state.duckdb; none without one
    (verdict_daemon.tenant_data)."""
    import duckdb

    path = Path(data_dir).resolve() / STATE_FILE
    if not path.exists():
        return set()
    con = duckdb.connect()
    try:
        attach_state(con, path, lock_timeout)
        present = _attached_tables(con)
        where, params = ("", {}) if tenant is None else (" WHERE tenant_id = $tenant", {"tenant": tenant})
        union = " UNION ".join(f"SELECT DISTINCT tenant_id FROM {STATE_ALIAS}.{t}{where}"
                               for t in _TENANT_TABLES if t in present)
        return {t for (t,) in con.execute(union, params).fetchall()} if union else set()
    except duckdb.Error as exc:
        raise DaemonError("storage_error", f"the state file {path} is damaged (corrupt or truncated): "
                                           f"{str(exc).splitlines()[0][:200]}") from None
    finally:
        con.close()
