"""State files as the release before `dimension_verdicts.votes` wrote them: made by the real StateStore
running the migration list up to (not including) the votes step, so upgrading them runs that step
in place exactly as it runs on a user's file."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

from verdict_daemon.store import state
from verdict_daemon.store.state import MIGRATIONS, StateStore

VOTES_STEP = next(i for i, step in enumerate(MIGRATIONS) if any("ADD COLUMN votes" in s for s in step))


def create_previous_schema_state(data_dir: Path) -> Path:
    """An empty state.duckdb at the schema version before the votes step; returns its path."""
    with patch.multiple(state, MIGRATIONS=MIGRATIONS[:VOTES_STEP], SCHEMA_VERSION=VOTES_STEP):
        store = StateStore(data_dir)
        assert store.schema_version() == VOTES_STEP
    return store.path
