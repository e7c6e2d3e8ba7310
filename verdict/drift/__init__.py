"""Drift detection: has a (cluster, dimension) got worse in the last day than in the week before?

`detector` holds `DriftDetector`; the rest of the package is split into `model` (the report's types),
`input` (reading and encoding the judgment columns) and `analysis` (the per-cell statistics). Importing
the package loads no numpy, scipy or pyarrow: `detect` does, on first use.
"""

from verdict.drift.detector import (
    REQUIRED_COLUMNS,
    CellStatus,
    Coverage,
    CoverageStatus,
    DriftCell,
    DriftDetector,
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
