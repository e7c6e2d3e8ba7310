"""What reviewer labels feed: the judge-vs-human agreement harness and sentinel-set export.

- `review_agreement`: per dimension, the latest human label on each item against the judge verdict of
  that item, through verdict.agreement.evaluate_agreement (TPR, TNR, raw agreement with Wilson
  intervals, Cohen's kappa and Gwet's AC1 with theirs). One evaluator at a time: labels of items
  judged by several evaluator fingerprints need an explicit choice (`evaluator_ambiguous`). Next to
  it, agreement among the reviewers themselves on the same items (each reviewer's latest label per
  item, through verdict.agreement.evaluate_rater_agreement), which flags a vague rubric.
- `export_sentinel`: one sentinel example per labelled trace (verdict.sentinel's JSONL), the latest
  label per (trace, dimension) across the trace's items, content redacted, with the conversation so far and the
  tool trajectory its judge was shown (so the sentinel grades the input the reviewer labelled); a trace whose
  evaluators were shown different inputs gives one example per input. The file is written
  atomically, so a failed export leaves no partial file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from verdict.redact import redact_text
from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.review.queue import judged_input
from verdict_daemon.store.review import ReviewRepository
from verdict_daemon.store.state import StateStore

# What a sentinel example takes of the judge's input: the graded text, and what it was shown beside it.
_SHOWN = ("query", "graded", "context", "history", "trajectory")


@dataclass(frozen=True)
class DimensionAgreement:
    dimension: str
    report: Any  # verdict.agreement.AgreementReport: the judge against the label in force
    humans: Any  # verdict.agreement.RaterAgreement: the reviewers among themselves

    def to_dict(self) -> dict[str, Any]:
        return {"dimension": self.dimension, **_plain(asdict(self.report)),
                "human_agreement": _plain(asdict(self.humans))}


def _plain(value: Any) -> Any:
    """JSON-ready: NaN (a rate with no trials) becomes None."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def choose_fingerprint(present: dict[str, str | None], evaluator: str | None, fingerprint: str | None) -> str:
    """The one fingerprint to use among `present` (fingerprint -> evaluator name), by name or fingerprint."""
    if fingerprint is not None:
        if fingerprint not in present:
            raise DaemonError("invalid_config", f"--fingerprint: no judgments by {fingerprint} "
                              f"(present: {', '.join(sorted(present)) or 'none'})")
        return fingerprint
    candidates = sorted(f for f, name in present.items() if evaluator is None or name == evaluator)
    if evaluator is not None and not candidates:
        names = sorted({str(n) for n in present.values()})
        raise DaemonError("invalid_config", f"--evaluator: no judgments by {evaluator!r} (present: {', '.join(names)})")
    if len(candidates) > 1:
        named = ", ".join(f"{f} ({present[f]})" for f in candidates)
        raise DaemonError("evaluator_ambiguous", f"judgments by {len(candidates)} evaluator fingerprints: {named}; "
                          "choose one with --fingerprint (or --evaluator)",
                          {"fingerprints": candidates})
    return candidates[0]


def review_agreement(store: StateStore, tenant: TenantId, *, evaluator: str | None = None, fingerprint: str | None = None,
                     positive: str = "FAIL", confidence: float = 0.95, min_human_ac1: float | None = None,
                     seed: int = 0) -> tuple[str, list[DimensionAgreement]]:
    """(fingerprint, per-dimension agreement of the judge with the latest human labels, and of the
    reviewers among themselves on the same items)."""
    from verdict.agreement import (
        RUBRIC_MIN_AC1,
        LabelledItem,
        evaluate_agreement,
        evaluate_rater_agreement,
    )

    repository = ReviewRepository(store)
    rows = repository.latest_labels(tenant)
    if not rows:
        raise DaemonError("no_labels", f"tenant {tenant!r} has no reviewer labels yet")
    chosen = choose_fingerprint({r.fingerprint: r.evaluator for r in rows}, evaluator, fingerprint)
    by_dimension: dict[str, list] = {}
    for r in rows:
        if r.fingerprint == chosen:
            by_dimension.setdefault(r.dimension, []).append(
                LabelledItem(r.item_id, r.label, r.verdict if r.verdict in ("PASS", "FAIL", "UNCLEAR") else "ERROR",
                             critique=r.critique, rationale=redact_text(r.rationale or "")))
    by_reviewer: dict[str, dict[str, dict[str, str]]] = {}
    for rating in repository.reviewer_labels(tenant):
        if rating.fingerprint == chosen:
            by_reviewer.setdefault(rating.dimension, {}).setdefault(rating.item_id, {})[rating.reviewer] = rating.label
    threshold = RUBRIC_MIN_AC1 if min_human_ac1 is None else min_human_ac1
    return chosen, [DimensionAgreement(
        d, evaluate_agreement(items, positive=positive, confidence=confidence),
        evaluate_rater_agreement(by_reviewer.get(d, {}), min_ac1=threshold, confidence=confidence, seed=seed))
        for d, items in sorted(by_dimension.items())]


def export_sentinel(store: StateStore, tenant: TenantId, out: Path, *, evaluator: str | None = None,
                    fingerprint: str | None = None) -> int:
    """Write the tenant's labels as a sentinel JSONL file; returns the number of examples. With an
    evaluator (name or fingerprint), only labels on its items: its rubric's dimensions."""
    repository = ReviewRepository(store)
    rows = repository.latest_labels(tenant)
    if not rows:
        raise DaemonError("no_labels", f"tenant {tenant!r} has no reviewer labels yet")
    if evaluator is not None or fingerprint is not None:
        chosen = choose_fingerprint({r.fingerprint: r.evaluator for r in rows}, evaluator, fingerprint)
        rows = [r for r in rows if r.fingerprint == chosen]
    content, definitions = repository.contents(tenant, sorted({r.trace_id for r in rows}),
                                               sorted({r.fingerprint for r in rows}))
    shown: dict[tuple[str, str], tuple[str, ...]] = {}  # (trace, fingerprint) -> what its judge was shown
    labels: dict[tuple[str, ...], dict[str, tuple]] = {}  # (trace, *shown) -> dimension -> latest label
    for r in rows:
        if (r.trace_id, r.fingerprint) not in shown:
            sample = judged_input(content[r.trace_id], definitions.get(r.fingerprint))
            shown[r.trace_id, r.fingerprint] = tuple(sample[k] for k in _SHOWN)
        example = labels.setdefault((r.trace_id, *shown[r.trace_id, r.fingerprint]), {})
        current = example.get(r.dimension)
        if current is None or (r.labelled_at, r.revision) > current[1:]:
            example[r.dimension] = (r.label, r.labelled_at, r.revision)
    per_trace = Counter(key[0] for key in labels)
    numbers: Counter[str] = Counter()
    lines = []
    for key in sorted(labels):
        trace, values = key[0], dict(zip(_SHOWN, key[1:], strict=True))
        numbers[trace] += 1
        lines.append(json.dumps({
            # A trace whose judges were shown different inputs (another history bound, trajectories or not) gives
            # one example per input: each is labelled against what its reviewer saw.
            "id": trace if per_trace[trace] == 1 else f"{trace}#{numbers[trace]}",
            "query": redact_text(values["query"]) if values["query"] else None,
            "response": redact_text(values["graded"]),
            "context": redact_text(values["context"]) if values["context"] else None,
            **{k: redact_text(values[k]) for k in ("history", "trajectory") if values[k]},
            "labels": {d: v[0] for d, v in sorted(labels[key].items())}}, ensure_ascii=False))
    _write_atomically(out, "".join(line + "\n" for line in lines))
    return len(lines)


def _write_atomically(path: Path, text: str) -> None:
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if str(path.parent) else ".")
    except OSError as exc:
        raise DaemonError("invalid_config", f"--out: cannot write in {path.parent} ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DaemonError("invalid_config", f"--out: cannot write {path} ({exc.strerror})") from None
