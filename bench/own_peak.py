"""A process's own peak RSS, for benches that measure a child process.

Not ru_maxrss (wait4, RUSAGE_CHILDREN): Linux carries the parent's peak into a child's ru_maxrss when it execs, so a
bench that built a 1 GiB lake reported that as its child's peak. VmHWM is the child's own.

    python bench/own_peak.py OUT -m MODULE ARGS...   # runs MODULE as __main__; writes its peak (MiB) to OUT at exit

Run as a script by path, so it works whatever checkout PYTHONPATH names (a --baseline's code lacks this file).
"""

from __future__ import annotations

import os
import runpy
import sys


def own_peak_mib() -> float:
    """This process's peak resident set (VmHWM), MiB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def _run_module(out: str, module: str, args: list[str]) -> None:
    sys.argv = [module, *args]
    sys.path[0] = os.getcwd()  # as `python -m` has it, not this script's directory
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:  # the CLI ends with SystemExit
        with open(out, "w") as f:
            f.write(f"{own_peak_mib()}\n")


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] != "-m":
        raise SystemExit(__doc__)
    _run_module(sys.argv[1], sys.argv[3], sys.argv[4:])
