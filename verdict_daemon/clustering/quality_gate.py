"""The preregistered quality gate for semantic clustering, run on a frozen evaluation set.

The evaluation set is the 80 MT-Bench questions bundled in `verdict_daemon/data` (first turn of
each), labelled by their 8 categories (10 each); its SHA-256 is pinned below so an edited file
fails loudly instead of silently moving the goal posts.

The thresholds were written into this file on 2026-11-30 before the first evaluation run and
must not be tuned after looking at results (docs/semantic-clustering.md records the figures
measured, pass or fail). Outliers count as one extra group (label -1) in purity and ARI, so
discarding hard points cannot buy a better score.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from verdict_daemon.clustering.semantic import OUTLIER, SemanticParams, fit_semantic

if TYPE_CHECKING:
    from verdict_daemon.clustering.semantic import Embedder

# Preregistered (2026-11-30, before any run). The first is the gate; the others keep a
# degenerate partition from passing it (a random 8-way split has purity ~0.2 and ARI ~0).
GATE_MAX_LARGEST_SHARE = 0.30   # largest non-outlier cluster / all points
GATE_MIN_PURITY = 0.50          # majority-category share, outliers as one group
GATE_MIN_ARI = 0.20             # adjusted Rand index against the 8 categories
GATE_MAX_OUTLIER_SHARE = 0.20   # points beyond every radius / all points

EVAL_SET_FILE = "mt_bench_questions.jsonl"
EVAL_SET_SHA256 = "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7"


@dataclass(frozen=True)
class EvalItem:
    question_id: int
    category: str
    text: str  # the question's first turn


@dataclass(frozen=True)
class GateResult:
    passed: bool
    failed_checks: tuple[str, ...]
    purity: float
    ari: float
    largest_share: float
    outlier_share: float
    n: int
    k: int
    params: SemanticParams
    model_fingerprint: str
    eval_set_sha256: str = EVAL_SET_SHA256

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "status": "gate_passed" if self.passed else "gate_failed",
            "failed_checks": list(self.failed_checks),
            "purity": self.purity,
            "ari": self.ari,
            "largest_share": self.largest_share,
            "outlier_share": self.outlier_share,
            "n": self.n,
            "k": self.k,
            "thresholds": {
                "max_largest_share": GATE_MAX_LARGEST_SHARE,
                "min_purity": GATE_MIN_PURITY,
                "min_ari": GATE_MIN_ARI,
                "max_outlier_share": GATE_MAX_OUTLIER_SHARE,
            },
            "params": self.params.to_dict(),
            "model_fingerprint": self.model_fingerprint,
            "eval_set": {"file": EVAL_SET_FILE, "sha256": self.eval_set_sha256},
        }


class EvalSetChanged(Exception):
    """The bundled evaluation file no longer matches its pinned hash."""


def load_eval_set() -> tuple[EvalItem, ...]:
    raw = resources.files("verdict_daemon.data").joinpath(EVAL_SET_FILE).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != EVAL_SET_SHA256:
        raise EvalSetChanged(f"{EVAL_SET_FILE} has sha256 {digest}, the frozen set is {EVAL_SET_SHA256}")
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    return tuple(EvalItem(int(r["question_id"]), str(r["category"]), str(r["turns"][0])) for r in rows)


def _comb2(x: Any) -> Any:
    return x * (x - 1) / 2


def partition_scores(truth: Sequence[str], labels: Sequence[int]) -> tuple[float, float]:
    """(purity, adjusted Rand index) of `labels` against `truth`; -1 is one group like any other."""
    import numpy as np

    if len(truth) != len(labels) or not truth:
        raise ValueError(f"need equally long, non-empty label lists (got {len(truth)} and {len(labels)})")
    _, t = np.unique(np.asarray(truth), return_inverse=True)
    _, p = np.unique(np.asarray(labels), return_inverse=True)
    table = np.zeros((p.max() + 1, t.max() + 1), dtype=np.int64)
    np.add.at(table, (p, t), 1)
    n = len(truth)
    purity = float(table.max(axis=1).sum() / n)
    if n < 2:
        return purity, 1.0
    index = _comb2(table).sum()
    rows, cols = _comb2(table.sum(axis=1)).sum(), _comb2(table.sum(axis=0)).sum()
    expected = rows * cols / _comb2(n)
    maximum = (rows + cols) / 2
    # Hubert-Arabie ARI; both partitions trivial (one group, or all singletons) count as perfect.
    ari = 1.0 if maximum == expected else float((index - expected) / (maximum - expected))
    return purity, ari


def evaluate_gate(truth: Sequence[str], labels: Sequence[int], k: int, params: SemanticParams,
                  model_fingerprint: str) -> GateResult:
    n = len(labels)
    purity, ari = partition_scores(truth, labels)
    counts: dict[int, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    outliers = counts.pop(OUTLIER, 0)
    largest_share = max(counts.values(), default=0) / n
    outlier_share = outliers / n
    checks = {
        "largest_share": largest_share <= GATE_MAX_LARGEST_SHARE,
        "purity": purity >= GATE_MIN_PURITY,
        "ari": ari >= GATE_MIN_ARI,
        "outlier_share": outlier_share <= GATE_MAX_OUTLIER_SHARE,
    }
    failed = tuple(name for name, ok in checks.items() if not ok)
    return GateResult(not failed, failed, purity, ari, largest_share, outlier_share, n, k, params,
                      model_fingerprint)


def run_quality_gate(embedder: Embedder, params: SemanticParams | None = None) -> GateResult:
    """Embed the frozen set's first turns, fit with `params`, and score the fit's labels."""
    params = params or SemanticParams()
    items = load_eval_set()
    vectors = embedder.embed([item.text for item in items])
    fit = fit_semantic(vectors, params, ids=[f"mt-bench-{item.question_id}" for item in items])
    return evaluate_gate([item.category for item in items], fit.labels, fit.k, params,
                         embedder.fingerprint)
