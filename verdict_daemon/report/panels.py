"""Panels fed by neighbouring components: behaviour-probe artifacts (verdict.probes.load_artifact) and
the human review queue (verdict_daemon.review: queue_summary, list_items, get_item). Each says why when it has nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.report.model import Panel, ReviewItem, ReviewList, ReviewQueue

# Items shown with their conversation (the newest first); each costs one `get_item` read of state.duckdb.
PENDING_SHOWN = 25
LABELLED_SHOWN = 10

PROBE_COLUMNS = ("Run", "Suite", "Target / judge model", "Pass / fail / error", "Pass rate", "Gate", "Categories",
                 "Not passing", "Load warnings")


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def probe_panel(paths: Sequence[Path], store: Path, tenant: str) -> Panel:
    """One row per probe run of `tenant`, figures recomputed by `load_artifact` from the per-probe records:
    each file given, the latest run of each series in each directory given or, with nothing given, in the
    tenant's directory of the data dir's probe store (`store/tenant=<id>`, where the daemon's probes job
    and `verdict probes run --data-dir` write). Fail closed on tenancy: a run stamped with another tenant is
    never shown (a file given by name is an error), a path given inside the store must be inside the
    tenant's own directory, and runs left directly in `store` (written before runs were tenant-scoped)
    belong to no tenant: they are counted in the note with how to assign them. Files of a directory that
    are not readable artifacts are counted too; a file given by name must load."""
    from verdict.probes import ArtifactError, load_artifact, load_history, tenant_dir

    own = tenant_dir(store, tenant)
    for path in paths:
        inside = path.resolve().is_relative_to(store.resolve())
        if inside and not path.resolve().is_relative_to(own.resolve()):
            raise DaemonError("invalid_config", f"--probes {path}: inside the data dir's probe store only "
                                                f"{store.name}/{own.name}/ belongs to tenant {tenant!r}")
    runs, skipped, foreign = [], 0, 0
    for path in paths or ([own] if own.is_dir() else []):
        if path.is_dir():
            history = load_history(path)
            mine = [run for run in history.runs if run.tenant in (None, tenant)]
            runs += [series[-1] for series in dataclasses.replace(history, runs=tuple(mine)).series().values()]
            skipped += len(history.skipped)
            foreign += len(history.runs) - len(mine)
            continue
        try:
            run = load_artifact(path)
        except ArtifactError as exc:
            raise DaemonError("invalid_config", f"--probes: {exc}") from None
        if run.tenant not in (None, tenant):
            raise DaemonError("invalid_config", f"--probes {path}: the run belongs to tenant {run.tenant!r}, "
                                                f"not {tenant!r}")
        runs.append(run)
    note = " ".join(text for count, text in (
        (skipped, f"{skipped} file(s) in the probe directory are not readable probe-run artifacts."),
        (foreign, f"{foreign} run(s) in the probe directory belong to another tenant and are not shown."),
        _unassigned(store, own)) if count) or None
    if not runs:
        where = ", ".join(p.name for p in paths) if paths else f"{store.name}/{own.name}/ of the data dir"
        reason = (f"No probe-run artifact found in {where}." if paths or own.is_dir() else
                  f"No probe results: the daemon's probes job ([probes] in verdict.toml) and `verdict probes run "
                  f"--data-dir DATA_DIR --tenant {tenant}` write tenant {tenant}'s runs to {store.name}/{own.name}/ "
                  f"in the data dir, or pass --probes run.json (written by "
                  "`verdict probes run --out run.json`) or a directory of them.")
        return Panel((), PROBE_COLUMNS, reason + (f" {note}" if note else ""))
    return Panel(tuple(_probe_row(run) for run in runs), PROBE_COLUMNS, None, note)


def _unassigned(store: Path, own: Path) -> tuple[int, str]:
    """Runs left directly in the store (written before runs were tenant-scoped): whose they are is unknown."""
    count = len(list(store.glob("*.json"))) if store.is_dir() else 0
    return count, (f"{count} probe-run artifact(s) directly in {store.name}/ of the data dir belong to no tenant "
                   f"(written before probe runs were tenant-scoped) and are shown in no tenant's report: move (or copy) each "
                   f"into {store.name}/tenant=<tenant>/ of the tenant it was run for, e.g. "
                   f"`mv DATA_DIR/{store.name}/*.json DATA_DIR/{store.name}/{own.name}/`.")


def _probe_row(run) -> tuple[str, ...]:
    score, gate = run.score, run.gate
    gate_text = ("passed" if gate.passed else "FAILED") + f" (minimum {_rate(run.min_pass_rate)})"
    if gate.failing_categories:
        gate_text += f"; failing: {', '.join(gate.failing_categories)}"
    return (f"{Path(run.source).name}, {run.started_at[:16].replace('T', ' ')}", f"{run.suite_name} {run.suite_version}",
            f"{run.target_model} / {run.judge_model}", f"{score.passed} / {score.failed} / {score.errors}",
            _rate(score.pass_rate), gate_text,
            ", ".join(f"{name} {_rate(s.pass_rate)}" for name, s in run.categories.items()),
            ", ".join(f"{r.name} ({r.outcome.value})" for r in run.results if not r.passed) or "none",
            str(len(run.warnings)))


def review_counts(store, tenant: TenantId) -> Panel:
    """The queue's figures (`queue_summary`) as a panel, or why the queue is empty."""
    from verdict_daemon.review import queue_summary

    summary = queue_summary(store, tenant)
    if not summary["items"]:
        return Panel((), (), "The review queue is empty: the daemon routes UNCLEAR verdicts, ensemble "
                             "disagreements, inconsistent pairwise results and a small random audit sample "
                             "here after judging; reviewers label them with `verdict review label`.")
    rows = [("Items", summary["items"]), ("Pending (no label yet)", summary["pending"]),
            ("Labelled", summary["labelled"]), ("Label records", summary["label_records"]),
            ("Reviewers", summary["reviewers"])]
    by_reason = cast(dict[str, int], summary["by_reason"])  # queue_summary's counts per reason
    rows += [(f"Routed because: {reason.replace('_', ' ')}", n) for reason, n in by_reason.items()]
    return Panel(tuple((label, f"{n:,}") for label, n in rows), ("Measure", "Count"), None)


def review_queue(data_dir: Path, tenant: TenantId, lock_timeout: float) -> ReviewQueue:
    """The queue's counts (`review_counts`), then the newest pending and labelled items with their redacted
    conversation, the judge's verdicts and the labels in force (`list_items`, `get_item`; none of these ever
    creates a state file). Clusters are filled in by gather, which reads the tenant's judgments."""
    from verdict_daemon.review import get_item, list_items
    from verdict_daemon.store.state import StateStore

    store = StateStore(data_dir, lock_timeout=lock_timeout)
    counts = review_counts(store, tenant)
    if counts.empty_reason is not None:
        return ReviewQueue(counts)

    def newest(status: str, shown: int) -> ReviewList:
        page = list_items(store, tenant, status=status, limit=shown)
        details = (get_item(store, tenant, item.item_id) for item in page.items)
        return ReviewList(page.total, tuple(
            ReviewItem(d.item, None, d.query, d.response, d.context, d.judgments, tuple(d.latest.values()))
            for d in details))

    return ReviewQueue(counts, newest("pending", PENDING_SHOWN), newest("labelled", LABELLED_SHOWN))
