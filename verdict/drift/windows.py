"""Where each judgment of one run falls: current window, recent baseline, long-horizon reference, the
same-weekday windows a seasonal cell is compared with, and the longer windows a small cell is tested over
(docs/statistics.md, "Windows").

Times are microseconds since the epoch (int64 arrays); every method returns one boolean mask per row.
A *phase* is the position of a row in the week relative to the current window: rows whose start lies a
whole number k of weeks before the current window (and within its length) share its phase, "week k".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

WEEK_US = 7 * 86_400_000_000
SMALL_CELL_BASELINE = 3  # a small cell's baseline, in lengths of its current window


@dataclass(frozen=True)
class Layout:
    now: int
    current_start: int
    baseline_start: int
    baseline_end: int
    seasonal_weeks: int  # a seasonal cell's baseline: the current window's phase in weeks 1..seasonal_weeks
    reference_weeks: int  # the reference: the recent baseline this many weeks earlier; 0 = no reference
    small_cell: int = 0  # a small cell's current window: this long, ending at `now` (µs); 0 = none

    @property
    def small_baseline_end(self) -> int:
        """A small cell's baseline ends the gap before its current window, and is SMALL_CELL_BASELINE times as
        long (whole weeks: every weekday equally often on both sides)."""
        return self.now - self.small_cell - (self.current_start - self.baseline_end)

    @property
    def earliest(self) -> int:
        """No window reaches further back than this."""
        back = self.reference_weeks * WEEK_US
        small = self.small_baseline_end - SMALL_CELL_BASELINE * self.small_cell
        return min(self.baseline_start - back, self.current_start - self.seasonal_weeks * WEEK_US, small)

    def small_current(self, ts: np.ndarray) -> np.ndarray:
        return (ts >= self.now - self.small_cell) & (ts < self.now)

    def small_baseline(self, ts: np.ndarray) -> np.ndarray:
        end = self.small_baseline_end
        return (ts >= end - SMALL_CELL_BASELINE * self.small_cell) & (ts < end)

    def current(self, ts: np.ndarray) -> np.ndarray:
        return (ts >= self.current_start) & (ts < self.now)

    def recent(self, ts: np.ndarray) -> np.ndarray:
        return (ts >= self.baseline_start) & (ts < self.baseline_end)

    def reference(self, ts: np.ndarray) -> np.ndarray:
        import numpy as np

        back = self.reference_weeks * WEEK_US
        if not back:
            return np.zeros(ts.shape, dtype=bool)
        return (ts >= self.baseline_start - back) & (ts < self.baseline_end - back)

    def _week(self, ts: np.ndarray) -> np.ndarray:
        """Per row: k >= 1 if it lies in the current window's phase k weeks back, else 0."""
        import numpy as np

        offset = ts - self.current_start
        weeks, phase = np.divmod(offset, WEEK_US)  # one pass: int64 division is the costly part
        return np.where((phase < (self.now - self.current_start)) & (offset < 0), -weeks, 0)

    def seasonal(self, ts: np.ndarray) -> np.ndarray:
        """The same-weekday baseline: the current window's phase in weeks 1..seasonal_weeks."""
        week = self._week(ts)
        return (week >= 1) & (week <= self.seasonal_weeks)

    def other_phases(self, ts: np.ndarray) -> np.ndarray:
        """The rest of those weeks: what the same-weekday rows are checked against."""
        span = (ts >= self.current_start - self.seasonal_weeks * WEEK_US) & (ts < self.current_start)
        out: np.ndarray = span & ~self.seasonal(ts)
        return out
