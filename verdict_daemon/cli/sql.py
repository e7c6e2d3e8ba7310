"""`verdict sql` with the daemon's results: the collector's span views (`spans`, `llm_calls`) over the union of
the tenant's lakes (--data-dir, --lake-dir, --lake-url: verdict_daemon.lakes, as the daemon's commands read
them) plus the tenant's `judgments`, `drift_runs`, `drift_signals`, `review_items` and `review_labels` copied
from state.duckdb (verdict_daemon.store.views)."""

from __future__ import annotations

import argparse
import sys

from collector import sql
from collector.lake_union import LakeUnion
from verdict.cli_runner import checked_tenant
from verdict_daemon import lakes

_TABLES = """\
tables from the daemon's state (this tenant's rows, copied at query time; join on trace_id):
  judgments (one row per trace x dimension, latest attempt per evaluator fingerprint),
  drift_runs, drift_signals, review_items (the review queue), review_labels (every label
  record; `latest` marks the one in force).  --print-views prints only the span views.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sql.add_arguments(parser)
    lakes.add_arguments(parser)
    parser.epilog = _TABLES + (parser.epilog or "")


def _lakes(args: argparse.Namespace) -> LakeUnion:
    """The data dir and the options' lakes; the data dir read alone must exist (no_data_dir)."""
    checked_tenant(args.tenant)  # a bad tenant is reported before a bad or missing lake
    from verdict_daemon.config import Lake

    lake = lakes.with_arguments(Lake(), args)
    if not (lake.dirs or lake.urls):
        sql.require_data_dir(args.data_dir)
    return lakes.open_lakes(args.data_dir, lake)


def run(args: argparse.Namespace) -> int:
    def add_state(con) -> None:
        from verdict_daemon.store.views import add_state_views

        add_state_views(con, args.data_dir, args.tenant)  # state.duckdb locked or damaged: its own DaemonError

    union = _lakes(args)
    code = sql.run(args, union, prepare=add_state)
    if not args.print_views:  # after the answer, which may be right (a fresh install): a warning, not an error
        from verdict_daemon.tenant_data import no_data

        missing = no_data(args.tenant, args.data_dir, union)
        if missing is not None:
            sys.stderr.write(f"verdict sql: warning: {missing.message}\n")
    return code
