"""Gwet's AC1, Fleiss' kappa and Krippendorff's alpha with missing labels against irrCAC (Gwet's own
package, Python port), which pins scipy 1.12 and so runs in its side virtualenv `.venv-irrcac`
(`make reference-venvs`; `make test` builds it)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from verdict.stats.multirater import (
    fleiss_kappa,
    gwet_ac1_raters,
    krippendorff_alpha,
    rating_counts,
)

SIDE_PYTHON = Path(__file__).resolve().parents[2] / ".venv-irrcac" / "bin" / "python"
# Reads [[ratings of unit 1 by rater 1..r (null = missing)], ...] per data set, prints the coefficients.
SCRIPT = """
import json, sys
import pandas as pd
from irrCAC.raw import CAC
out = []
for units in json.load(sys.stdin):
    cac = CAC(pd.DataFrame(units, dtype=float), digits=12)
    out.append({name: getattr(cac, name)()["est"]["coefficient_value"] for name in ("gwet", "fleiss", "krippendorff")})
print(json.dumps(out))
"""


def _irrcac(datasets: Sequence[Sequence[Sequence[float | None]]]) -> list[dict[str, float]]:
    if not SIDE_PYTHON.exists():
        pytest.fail(f"{SIDE_PYTHON} is missing: run `make reference-venvs` (irrCAC's side virtualenv)")
    done = subprocess.run([str(SIDE_PYTHON), "-c", SCRIPT], input=json.dumps(datasets), capture_output=True,
                          text=True, check=True, timeout=120)
    return json.loads(done.stdout)


def test_ac1_fleiss_and_alpha_match_irrcac_with_missing_labels():
    rng = np.random.default_rng(12)
    datasets, counts = [], []
    for _ in range(25):
        q, raters, n = int(rng.integers(2, 5)), int(rng.integers(2, 6)), int(rng.integers(10, 80))
        truth = rng.integers(0, q, n)
        labels = np.where(rng.random((n, raters)) < 0.75, truth[:, None], rng.integers(0, q, (n, raters)))
        missing = rng.random((n, raters)) < 0.25
        missing[:, :2] = False  # every unit keeps two ratings, so all coefficients use every unit
        missing[0, :] = False
        units = [[None if m else float(v) for v, m in zip(row, miss, strict=True)] for row, miss in zip(labels, missing, strict=True)]
        datasets.append(units)
        counts.append(rating_counts(units, [float(c) for c in range(q)]))
    for ours_counts, ref in zip(counts, _irrcac(datasets), strict=True):
        # irrCAC leaves out categories nobody used; so do the coefficients (a zero column changes nothing)
        assert gwet_ac1_raters(ours_counts[:, ours_counts.sum(axis=0) > 0], n_resamples=100).value == \
            pytest.approx(ref["gwet"], abs=1e-9)
        assert krippendorff_alpha(ours_counts, n_resamples=100).value == pytest.approx(ref["krippendorff"], abs=1e-9)
    # Fleiss' kappa: irrCAC generalises it to missing labels; on complete data the two agree
    complete = [[[float(v) for v in row] for row in rng.integers(0, 3, (40, 4))] for _ in range(5)]
    for ratings, ref in zip(complete, _irrcac(complete), strict=True):
        assert fleiss_kappa(rating_counts(ratings, [0.0, 1.0, 2.0]), n_resamples=100).value == \
            pytest.approx(ref["fleiss"], abs=1e-9)

