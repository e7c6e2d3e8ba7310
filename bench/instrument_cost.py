"""One-time CPU of `verdict.init()` + `instrument()` in a fresh process, for an app that imports only
`openai`, next to the baseline where instrumenting also imports every installed provider SDK (what
`instrument()` did before it patched lazily). Medians of --rounds fresh interpreters (CPU seconds,
user + system, so a busy machine inflates them less than wall time).

    .venv/bin/python bench/instrument_cost.py --rounds 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = r"""
import json, resource, sys
start = resource.getrusage(resource.RUSAGE_SELF)
import openai  # the app's own import, in every mode
mid = resource.getrusage(resource.RUSAGE_SELF)
import verdict
verdict.init(service_name="bench", exporter=None)
verdict.instrument()
if sys.argv[1] == "eager":
    import anthropic  # what instrument() paid before: every installed provider SDK imported
end = resource.getrusage(resource.RUSAGE_SELF)
cpu = lambda a, b: (b.ru_utime - a.ru_utime) + (b.ru_stime - a.ru_stime)
print(json.dumps({"verdict_cpu_s": cpu(mid, end), "anthropic_loaded": "anthropic" in sys.modules}))
"""


def _measure(mode: str, rounds: int) -> tuple[float, bool]:
    samples, loaded = [], False
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        samples.append(result["verdict_cpu_s"])
        loaded = result["anthropic_loaded"]
    return statistics.median(samples), loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    lazy, lazy_loaded = _measure("lazy", args.rounds)
    eager, _ = _measure("eager", args.rounds)
    print(f"{'mode':<34} {'CPU s (median)':>15} {'anthropic imported':>19}")
    print(f"{'init()+instrument(), lazy (now)':<34} {lazy:>15.3f} {lazy_loaded!s:>19}")
    print(f"{'baseline: + import every SDK':<34} {eager:>15.3f} {'True':>19}")
    print(f"ratio now/baseline: {lazy / eager:.2f}x")


if __name__ == "__main__":
    main()
