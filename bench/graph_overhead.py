"""Engine overhead: `Layer(JudgeUnit(DiscreteScale((1, 5))), 3) >> MeanPoolUnit("score")` over 1,000 samples.

Prints, side by side, each figure, its target and the ratio (figure / target; for "at least" targets
target / figure, so a ratio <= 1.00 always means the target is met):

  * instant scripted model: model calls per second end to end (target >= 5,000), all rows present;
  * 50 ms scripted model at max_workers=128: wall time vs 1.3 x the ideal 3,000 x 50 ms / 128;
  * peak RSS of a fresh process running 10,000 samples with the instant model (target <= 300 MB);
  * the same three figures for the real `openai` client against the local fake OpenAI server
    (tests/fakes), where HTTP and the fake server share this machine's cores with the engine.

Both models return logprobs, so JudgeUnit's default extractor (token probabilities over the scale) is
the one measured. The fake server runs in its own process (as a real provider would), so its CPU is not
charged to the engine's interpreter; both still share this machine's two cores.

Usage: python bench/graph_overhead.py [--repeats N] [--skip-openai]
Timings are medians over the repeats; the machine is shared, so read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SAMPLES = 1_000
CALLS = 3 * SAMPLES
LATENCY = 0.05
WORKERS_SLOW = 128
WORKERS_FAST = 16
IDEAL_SLOW = CALLS * LATENCY / WORKERS_SLOW
RSS_SAMPLES = 10_000
REPLY = "3"
SLOW_MODEL = "gpt-4o-mini-slow"  # the fake server answers this model name after LATENCY seconds


def pipeline(model):
    from verdict.graph import Layer, Pipeline
    from verdict.judges import JudgeUnit
    from verdict.scale import DiscreteScale
    from verdict.transform import MeanPoolUnit

    return (Pipeline() >> Layer(JudgeUnit(DiscreteScale((1, 5))), 3) >> MeanPoolUnit("score")).via(model)


def timed_run(model, samples: int, workers: int) -> float:
    rows = pipeline(model).run_from_dataset(({"id": i} for i in range(samples)), max_workers=workers)
    if len(rows) != samples or rows.failed or [r.index for r in rows] != list(range(samples)):
        raise SystemExit(f"rows lost, duplicated or failed: {len(rows)} rows, {len(rows.failed)} failed")
    return rows.elapsed_s


def scripted(latency: float):
    from verdict.models.scripted import ScriptedModel

    return ScriptedModel([REPLY], latency=latency, logprobs=True)


def openai_model(base_url: str, latency: float = 0.0):
    from verdict.models.openai_model import OpenAIModel

    return OpenAIModel(SLOW_MODEL if latency else "gpt-4o-mini", base_url=base_url, api_key="bench",
                       rate_limits=None)


def serve_fake_openai() -> None:
    """`--serve`: run the fake OpenAI server until stdin closes; print its base URL first."""
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        base_url = server.stdout.readline().strip()
        rss = peak_rss_mb("openai", base_url)
        report(f"openai client -> fake OpenAI server at {base_url} (separate process)",
               measure(lambda latency: openai_model(base_url, latency), args.repeats, rss))
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    print(json.dumps({"python": sys.version.split()[0], "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                   time.gmtime())}))


if __name__ == "__main__":
    main()
