"""Panels fed by neighbouring components: behaviour-probe artifacts (verdict.probes.load_artifact) and
the human review queue (verdict_daemon.review.queue_summary). Each says why when it has nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from verdict_daemon.errors import DaemonError
from verdict_daemon.report.model import Panel

PROBE_COLUMNS = ("Run", "Suite", "Target / judge model", "Pass / fail / error", "Pass rate", "Gate", "Categories",
                 "Not passing", "Load warnings")


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def probe_panel(paths: Sequence[Path]) -> Panel:
    """One row per probe-run artifact, figures recomputed by `load_artifact` from the per-probe records."""
    from verdict.probes import ArtifactError, load_artifact

    if not paths:
        return Panel((), PROBE_COLUMNS, "No probe results given: pass --probes run.json (an artifact written by "
                                        "`verdict probes run --out run.json`) to show behaviour-probe results here.")
    rows = []
    for path in paths:
        try:
            run = load_artifact(path)
        except ArtifactError as exc:
            raise DaemonError("invalid_config", f"--probes: {exc}") from None
        score, gate = run.score, run.gate
        gate_text = ("passed" if gate.passed else "FAILED") + f" (minimum {_rate(run.min_pass_rate)})"
        if gate.failing_categories:
            gate_text += f"; failing: {', '.join(gate.failing_categories)}"
        rows.append((f"{Path(path).name}, {run.started_at[:16].replace('T', ' ')}", f"{run.suite_name} {run.suite_version}",
                     f"{run.target_model} / {run.judge_model}", f"{score.passed} / {score.failed} / {score.errors}",
                     _rate(score.pass_rate),
                     gate_text, ", ".join(f"{name} {_rate(s.pass_rate)}" for name, s in run.categories.items()),
                     ", ".join(f"{r.name} ({r.outcome.value})" for r in run.results if not r.passed) or "none",
                     str(len(run.warnings))))
    return Panel(tuple(rows), PROBE_COLUMNS, None)


def review_panel(data_dir: Path, tenant: str, lock_timeout: float) -> Panel:
    """The queue's counts from `queue_summary` (which never creates a state file)."""
    from verdict_daemon.review import queue_summary
    from verdict_daemon.state import StateStore

    summary = queue_summary(StateStore(data_dir, lock_timeout=lock_timeout), tenant)
    if not summary["items"]:
        return Panel((), (), "The review queue is empty: the daemon routes UNCLEAR verdicts, ensemble disagreements, "
                             "inconsistent pairwise results and a small random audit sample here after judging; "
                             "reviewers label them with `verdict review label`.")
    rows = [("Items", summary["items"]), ("Pending (no label yet)", summary["pending"]),
            ("Labelled", summary["labelled"]), ("Label records", summary["label_records"]),
            ("Reviewers", summary["reviewers"])]
    rows += [(f"Routed because: {reason.replace('_', ' ')}", n) for reason, n in summary["by_reason"].items()]
    return Panel(tuple((label, f"{n:,}") for label, n in rows), ("Measure", "Count"), None)
