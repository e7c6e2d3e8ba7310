"""The bounds of one `verdict sql` query: a statement timeout, DuckDB's memory limit and a row limit.

The timeout is enforced with DuckDB's own interrupt from a watchdog thread (a query blocked inside DuckDB, a
`count(*)` over `range(1e12)` or an unbounded recursive CTE, never returns to Python by itself). Python's
own memory is bounded by streaming (collector.sql_output); DuckDB's by `memory_limit`, past which it spills to a
private directory up to `spill_limit` (then the query fails instead of filling the disk the collector writes to).
"""

from __future__ import annotations

import argparse
import re
import threading
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 300.0
MAX_TIMEOUT_S = 86_400.0
DEFAULT_MEMORY_LIMIT = "50%"  # of physical RAM (DuckDB's own default is 80%)
DEFAULT_SPILL_LIMIT = "10GB"  # DuckDB's own default is 90% of the free space
REINTERRUPT_S = 0.05  # an interrupt that lands between two statements is lost: repeat it until stopped
_MEMORY = re.compile(r"(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>%|[kmgt]i?b|b)", re.IGNORECASE)


@dataclass(frozen=True)
class QueryLimits:
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_limit: str = DEFAULT_MEMORY_LIMIT  # a DuckDB size ('4GB', '512MiB') or a share of RAM ('50%')
    spill_limit: str | None = DEFAULT_SPILL_LIMIT  # a DuckDB size; None: no spilling
    max_rows: int | None = None  # rows written at most; None: all


def timeout_seconds(text: str) -> float:
    """argparse type of --timeout-s: seconds in (0, MAX_TIMEOUT_S]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, not {text!r}")
    return value


def memory_limit(text: str) -> str:
    """argparse type of --memory-limit: a positive DuckDB size or a share of RAM up to 100%."""
    match = _MEMORY.fullmatch(text.strip())
    if match is None or float(match["amount"]) <= 0 or (match["unit"] == "%" and float(match["amount"]) > 100):
        raise argparse.ArgumentTypeError(f"expected a size such as 4GB, 512MiB or a share of RAM such as 50%, "
                                         f"not {text!r}")
    return f"{match['amount']}{match['unit']}"


def spill_limit(text: str) -> str | None:
    """argparse type of --spill-limit: a DuckDB size, or 0 (None: nothing spills)."""
    if text.strip() == "0":
        return None
    match = _MEMORY.fullmatch(text.strip())
    if match is None or float(match["amount"]) <= 0 or match["unit"] == "%":
        raise argparse.ArgumentTypeError(f"expected a size such as 10GB or 512MiB, or 0 to spill nothing, not {text!r}")
    return f"{match['amount']}{match['unit']}"


def max_rows(text: str) -> int:
    """argparse type of --max-rows: a positive row count."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of rows, not {text!r}")
    return int(text)


class Watchdog:
    """Interrupts a DuckDB connection once `seconds` have passed, until stopped (stop() before closing it)."""

    def __init__(self, con, seconds: float) -> None:
        self.fired = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(con, seconds), name="verdict-sql-timeout",
                                         daemon=True)
        self._thread.start()

    def _run(self, con, seconds: float) -> None:
        if self._stop.wait(seconds):
            return
        self.fired = True
        while True:
            con.interrupt()
            if self._stop.wait(REINTERRUPT_S):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
