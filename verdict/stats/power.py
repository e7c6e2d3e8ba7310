"""Power and minimum detectable effect of a two-sided two-proportion comparison.

Effect size is Cohen's h = 2·asin(sqrt(p1)) - 2·asin(sqrt(p2)) (the arcsine transformation, as
statsmodels ``proportion_effectsize`` + ``NormalIndPower``), whose variance 1/n1 + 1/n2 does not depend
on the rates. Power counts both rejection tails, exactly as NormalIndPower does. The minimum
detectable effect inverts the dominant tail in closed form (the other tail adds < 1e-5 at 80 %
power) and maps h back to a drop in rate from the baseline rate.
"""

from __future__ import annotations

import numpy as np

from verdict.stats._arrays import probability


def cohens_h(p1: float, p2: float) -> float:
    """Arcsine effect size of p1 versus p2."""
    return float(
        2 * np.arcsin(np.sqrt(probability("p1", p1, open_interval=False)))
        - 2 * np.arcsin(np.sqrt(probability("p2", p2, open_interval=False)))
    )


def two_proportion_power(p1: float, p2: float, n1: int, n2: int, *, alpha: float = 0.05) -> float:
    """Probability that a two-sided level-alpha test detects rates p1 versus p2 with n1, n2 trials."""
    from scipy.special import ndtr, ndtri

    _sizes(n1, n2)
    z = float(ndtri(1 - probability("alpha", alpha) / 2))
    shift = abs(cohens_h(p1, p2)) * np.sqrt(n1 * n2 / (n1 + n2))
    return float(ndtr(shift - z) + ndtr(-shift - z))


def minimum_detectable_drop(
    baseline_rate: np.ndarray | float,
    n1: np.ndarray | int,
    n2: np.ndarray | int,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
) -> np.ndarray:
    """Smallest drop below `baseline_rate` (in rate points) detected with the given power (vectorised).

    A drop to zero is the most the data can show, so the result is at most the baseline rate.
    """
    from scipy.special import ndtri

    a = probability("alpha", alpha)
    b = probability("power", power)
    n1a, n2a = np.asarray(n1, dtype=float), np.asarray(n2, dtype=float)
    h = (ndtri(1 - a / 2) + ndtri(b)) / np.sqrt(n1a * n2a / (n1a + n2a))
    phi = np.arcsin(np.sqrt(np.clip(np.asarray(baseline_rate, dtype=float), 0.0, 1.0)))
    lower = np.sin(np.maximum(phi - h / 2, 0.0)) ** 2
    return np.asarray(np.sin(phi) ** 2 - lower)


def _sizes(n1: int, n2: int) -> None:
    if n1 < 1 or n2 < 1:
        raise ValueError(f"sample sizes must be positive, got n1={n1}, n2={n2}")


def minimum_detectable_delta(
    n1: np.ndarray | int, n2: np.ndarray | int, *, alpha: float = 0.05, power: float = 0.8
) -> np.ndarray:
    """Smallest |Cliff's delta| a two-sided Mann-Whitney test detects with the given power (vectorised).

    Uses the null variance of delta, (n1 + n2 + 1) / (3·n1·n2), i.e. the normal approximation of
    U without ties; a shift-alternative approximation, documented as such.
    """
    from scipy.special import ndtri

    a = probability("alpha", alpha)
    b = probability("power", power)
    n1a, n2a = np.asarray(n1, dtype=float), np.asarray(n2, dtype=float)
    return np.asarray((ndtri(1 - a / 2) + ndtri(b)) * np.sqrt((n1a + n2a + 1) / (3 * n1a * n2a)))
