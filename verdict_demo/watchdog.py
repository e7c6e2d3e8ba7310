"""The demo's no-progress watchdog and judging ETA, fed with daemon progress snapshots and a clock.

Progress is work that moves the demo towards its result: traces sampled, traces with a usable judgment,
cluster assignments, alerts. Drift runs and failed judge attempts are not: a daemon whose judge fails on
every call still commits a drift run every few seconds. After `timeout` seconds without progress the
demo stops with the judge's last error and a hint. When judging is slow, the estimated time to judge
the rest is said once it is known, and again every `eta_every` seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from verdict_demo.processes import ComponentFailed

ETA_WORTH_SAYING = 120.0  # seconds of judging left from which an estimate is printed
HINT = ("check the judge: VERDICT_JUDGE_MODEL (and OPENAI_BASE_URL / OPENAI_API_KEY for openai/...) or run "
        "without them for the offline judge; docs/models.md lists the options for local servers")


@dataclass(frozen=True)
class JudgeProgress:
    sampled: int
    usable: int  # sampled traces with a usable (OK) judgment
    assigned: int
    alerts: int
    last_error: str | None  # "[code] message" of the newest failed judge attempt

    @property
    def key(self) -> tuple[int, int, int, int]:
        return self.sampled, self.usable, self.assigned, self.alerts


class Watchdog:
    def __init__(self, expected: int, timeout: float, now: float, *, eta_every: float = 60.0) -> None:
        self.expected = expected
        self.timeout = timeout
        self.eta_every = eta_every
        self._key: tuple[int, int, int, int] | None = None
        self._changed_at = now
        self._first_usable: tuple[float, int] | None = None
        self._eta_said_at: float | None = None

    def observe(self, progress: JudgeProgress, now: float) -> str | None:
        """Raise ComponentFailed after `timeout` s without progress; return an ETA line when one is due."""
        if progress.key != self._key:
            self._key, self._changed_at = progress.key, now
        elif now - self._changed_at > self.timeout:
            error = f"; the judge's last error: {progress.last_error}" if progress.last_error else ""
            raise ComponentFailed(
                f"verdict-daemon made no progress for {self.timeout:g} s (usable judgments: {progress.usable} of "
                f"{progress.sampled} sampled traces){error}. Hint: {HINT}")
        return self._eta(progress, now)

    def _eta(self, progress: JudgeProgress, now: float) -> str | None:
        if progress.usable == 0:
            return None
        if self._first_usable is None:
            self._first_usable = (now, progress.usable)
            return None
        started, at_start = self._first_usable
        done = progress.usable - at_start
        if done <= 0 or now <= started:
            return None
        per_trace = (now - started) / done
        left = max(self.expected - progress.usable, 0) * per_trace
        due = self._eta_said_at is None or now - self._eta_said_at >= self.eta_every
        if left < ETA_WORTH_SAYING or not due:
            return None
        self._eta_said_at = now
        return (f"judging takes {per_trace:.1f} s per trace: about {_duration(left)} left for "
                f"{self.expected - progress.usable} trace(s)")


def _duration(seconds: float) -> str:
    minutes = math.ceil(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
