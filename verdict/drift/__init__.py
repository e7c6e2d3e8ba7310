"""Drift detection: has a (cluster, dimension) got worse in the last day than in the week before?

`detector` holds `DriftDetector`; `model` the report's types, `input` the reading and encoding of the
judgment columns (their format is described there), `analysis` the per-cell statistics. Importing the
package loads no numpy, scipy or pyarrow: `DriftDetector.detect` does, on first use.
"""

from verdict.drift.detector import DriftDetector
from verdict.drift.input import REQUIRED_COLUMNS
from verdict.drift.model import (
    CellStatus,
    Coverage,
    CoverageStatus,
    DriftCell,
    DriftInputError,
    DriftReport,
    MetricKind,
    WindowCounts,
)

__all__ = [
    "REQUIRED_COLUMNS",
    "CellStatus",
    "Coverage",
    "CoverageStatus",
    "DriftCell",
    "DriftDetector",
    "DriftInputError",
    "DriftReport",
    "MetricKind",
    "WindowCounts",
]
