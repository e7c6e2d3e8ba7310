"""Boundary checks shared by the statistics functions: bad input fails with a precise message."""

from __future__ import annotations

from typing import Any

import numpy as np


def sample(name: str, values: Any, *, min_size: int = 1) -> np.ndarray:
    """A finite 1-D float sample with at least `min_size` values."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} needs at least {min_size} value(s), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def counts(name: str, values: Any) -> np.ndarray:
    """Non-negative integer counts (any shape) as int64."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold whole numbers")
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"{name} must be numeric counts, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative")
    return arr


def probability(name: str, value: float, *, open_interval: bool = True) -> float:
    """A probability strictly inside (0, 1) (or within [0, 1] when `open_interval` is False)."""
    v = float(value)
    ok = 0.0 < v < 1.0 if open_interval else 0.0 <= v <= 1.0
    if not ok:
        bounds = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {bounds}, got {value!r}")
    return v
