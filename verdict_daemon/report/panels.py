"""Panels fed by neighbouring components: behaviour-probe artifacts (verdict.probes.load_artifact) and
the human review queue (verdict_daemon.review: queue_summary, list_items, get_item). Each says why when it has nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from verdict_daemon.errors import DaemonError
from verdict_daemon.report.model import Panel, ReviewItem, ReviewList, ReviewQueue

# Items shown with their conversation (the newest first); each costs one `get_item` read of state.duckdb.
PENDING_SHOWN = 25
LABELLED_SHOWN = 10

PROBE_COLUMNS = ("Run", "Suite", "Target / judge model", "Pass / fail / error", "Pass rate", "Gate", "Categories",
                 "Not passing", "Load warnings")


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def probe_panel(paths: Sequence[Path], default_dir: Path) -> Panel:
    """One row per probe run, figures recomputed by `load_artifact` from the per-probe records: each file
    given, the latest run of each series in each directory given or, with nothing given, in `default_dir`
    (where the daemon's probes job writes) when it exists. Files of a directory that are not readable
    artifacts are counted in the panel's note, not fatal; a file given by name must load."""
    from verdict.probes import ArtifactError, load_artifact, load_history

    if not paths and not default_dir.is_dir():
        return Panel((), PROBE_COLUMNS, f"No probe results: the daemon's probes job ([probes] in verdict.toml) writes "
                                        f"its runs to {default_dir.name}/ in the data dir, or pass --probes run.json "
                                        "(written by `verdict probes run --out run.json`) or a directory of them.")
    runs, skipped = [], 0
    for path in paths or [default_dir]:
        if path.is_dir():
            history = load_history(path)
            runs += [series[-1] for series in history.series().values()]
            skipped += len(history.skipped)
            continue
        try:
            runs.append(load_artifact(path))
        except ArtifactError as exc:
            raise DaemonError("invalid_config", f"--probes: {exc}") from None
    note = f"{skipped} file(s) in the probe directory are not readable probe-run artifacts." if skipped else None
    if not runs:
        return Panel((), PROBE_COLUMNS, f"No probe-run artifact found in {', '.join(p.name for p in paths or [default_dir])}."
                     + (f" {note}" if note else ""))
    return Panel(tuple(_probe_row(run) for run in runs), PROBE_COLUMNS, None, note)


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


def review_queue(data_dir: Path, tenant: str, lock_timeout: float) -> ReviewQueue:
    """The queue's counts (`queue_summary`), then the newest pending and labelled items with their redacted
    conversation, the judge's verdicts and the labels in force (`list_items`, `get_item`; none of these ever
    creates a state file). Clusters are filled in by gather, which reads the tenant's judgments."""
    from verdict_daemon.review import get_item, list_items, queue_summary
    from verdict_daemon.state import StateStore

    store = StateStore(data_dir, lock_timeout=lock_timeout)
    summary = queue_summary(store, tenant)
    if not summary["items"]:
        return ReviewQueue(Panel((), (), "The review queue is empty: the daemon routes UNCLEAR verdicts, ensemble "
                                         "disagreements, inconsistent pairwise results and a small random audit sample "
                                         "here after judging; reviewers label them with `verdict review label`."))
    rows = [("Items", summary["items"]), ("Pending (no label yet)", summary["pending"]),
            ("Labelled", summary["labelled"]), ("Label records", summary["label_records"]),
            ("Reviewers", summary["reviewers"])]
    rows += [(f"Routed because: {reason.replace('_', ' ')}", n) for reason, n in summary["by_reason"].items()]

    def newest(status: str, shown: int) -> ReviewList:
        page = list_items(store, tenant, status=status, limit=shown)
        details = (get_item(store, tenant, item.item_id) for item in page.items)
        return ReviewList(page.total, tuple(
            ReviewItem(d.item, None, d.query, d.response, d.context, d.judgments, tuple(d.latest.values()))
            for d in details))

    return ReviewQueue(Panel(tuple((label, f"{n:,}") for label, n in rows), ("Measure", "Count"), None),
                       newest("pending", PENDING_SHOWN), newest("labelled", LABELLED_SHOWN))
