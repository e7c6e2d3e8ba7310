"""Engine overhead: `Layer(JudgeUnit(DiscreteScale((1, 5))), 3) >> MeanPoolUnit("score")` over 1,000 samples.

Prints, side by side, each figure, its target and the ratio (figure / target; for "at least" targets
target / figure, so a ratio <= 1.00 always means the target is met):

  * instant scripted model: model calls per second end to end (target >= 5,000), all rows present;
  * 50 ms scripted model at max_workers=128: wall time vs 1.3 x the ideal 3,000 x 50 ms / 128;
  * peak RSS of a fresh process running 10,000 samples with the instant model (target <= 300 MB);
  * the same figures for the real `openai` client against the local fake OpenAI server (tests/fakes),
    where HTTP, the client and the fake server share this machine's two cores with the engine; then the
    same 3,000 calls through the bare client on a thread pool (no engine), to show what the engine adds.

Both models return logprobs, so JudgeUnit's default extractor (token probabilities over the scale) is
the one measured. The fake server runs in its own process (as a real provider would), so its CPU is not
charged to the engine's interpreter; both still share this machine's two cores.

Usage: python bench/graph_overhead.py [--repeats N] [--openai-repeats N] [--skip-openai]
Timings are medians over the repeats; the machine is shared, so read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
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
    from tests.fakes import FakeOpenAI, Reply

    with FakeOpenAI() as server:
        server.default = Reply(REPLY)
        server.handler = lambda request: Reply(REPLY, latency=LATENCY) if request.body.get("model") == SLOW_MODEL \
            else None
        print(server.base_url, flush=True)
        sys.stdin.read()


def peak_rss_mb(kind: str, base_url: str = "") -> float:
    """Run 10,000 samples in a fresh interpreter (`--rss-child`) and return its peak RSS."""
    command = [sys.executable, __file__, "--rss-child", kind, base_url]
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the {kind} RSS run failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def rss_child(kind: str, base_url: str) -> None:
    import resource

    timed_run(scripted(0.0) if kind == "scripted" else openai_model(base_url), RSS_SAMPLES, WORKERS_FAST)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def measure(make_model, repeats: int, rss: float) -> list[tuple[str, float, str, float]]:
    timed_run(make_model(0.0), 100, WORKERS_FAST)  # warm imports, pydantic and connections
    walls = {
        "fast": statistics.median(timed_run(make_model(0.0), SAMPLES, WORKERS_FAST) for _ in range(repeats)),
        "wide": statistics.median(timed_run(make_model(0.0), SAMPLES, WORKERS_SLOW) for _ in range(repeats)),
        "slow": statistics.median(timed_run(make_model(LATENCY), SAMPLES, WORKERS_SLOW) for _ in range(repeats)),
    }
    return [
        (f"instant model, max_workers={WORKERS_FAST}: calls/s", CALLS / walls["fast"], ">= 5000",
         5000 * walls["fast"] / CALLS),
        (f"instant model, max_workers={WORKERS_SLOW}: calls/s", CALLS / walls["wide"], ">= 5000",
         5000 * walls["wide"] / CALLS),
        (f"50 ms model, max_workers={WORKERS_SLOW}: wall s (ideal {IDEAL_SLOW:.2f})", walls["slow"],
         f"<= {1.3 * IDEAL_SLOW:.2f}", walls["slow"] / (1.3 * IDEAL_SLOW)),
        (f"peak RSS, {RSS_SAMPLES:,} samples: MB", rss, "<= 300", rss / 300),
    ]


def bare_client_wall(model, workers: int) -> float:
    """3,000 requests like the judges' straight through `model.complete` on a thread pool: no engine."""
    from concurrent.futures import ThreadPoolExecutor

    from verdict.models.base import Message, ModelRequest

    request = ModelRequest((Message("system", "You are a careful, impartial evaluator."),
                            Message("user", "Evaluate the following sample.\n\nid: 1\n\nAnswer with only the "
                                            "score (an integer from 1 (worst) to 5 (best)).")), top_logprobs=20)
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(model.complete, [request] * CALLS))
    return time.perf_counter() - started


def process_cpu_s() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def engine_vs_client(base_url: str, repeats: int) -> list[tuple[str, float, float, float, float]]:
    """Wall and CPU seconds of this process for 3,000 calls through the engine and through the bare client,
    alternating, medians. CPU is the robust figure on a shared machine: it is what the engine adds."""
    rows = []
    for workers, latency in ((WORKERS_FAST, 0.0), (WORKERS_SLOW, LATENCY)):
        model = openai_model(base_url, latency)
        samples: dict[str, list[tuple[float, float]]] = {"engine": [], "bare": []}
        for _ in range(repeats):
            for kind in samples:
                cpu = process_cpu_s()
                wall = timed_run(model, SAMPLES, workers) if kind == "engine" else bare_client_wall(model, workers)
                samples[kind].append((wall, process_cpu_s() - cpu))
        (engine_wall, engine_cpu), (bare_wall, bare_cpu) = (
            tuple(statistics.median(v) for v in zip(*samples[k], strict=True)) for k in ("engine", "bare"))
        label = "instant" if not latency else "50 ms"
        rows.append((f"{label}, {workers} threads", engine_wall, bare_wall, engine_cpu, bare_cpu))
    return rows


def report(title: str, rows: list[tuple[str, float, str, float]]) -> None:
    print(f"\n{title}", flush=True)
    print(f"  {'figure':<58} {'value':>10} {'target':>10} {'ratio':>7}")
    for name, value, target, ratio in rows:
        flag = "ok" if ratio <= 1 else "MISSED"
        print(f"  {name:<58} {value:>10.2f} {target:>10} {ratio:>7.2f} {flag}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--openai-repeats", type=int, default=1,
                        help="repeats for the openai client section (each run is ~10 s through HTTP)")
    parser.add_argument("--skip-openai", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rss-child", nargs=2, metavar=("KIND", "BASE_URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve_fake_openai()
    if args.rss_child:
        return rss_child(*args.rss_child)
    print(f"{SAMPLES:,} samples x Layer(JudgeUnit(DiscreteScale((1, 5))), 3) >> MeanPoolUnit = {CALLS:,} "
          f"model calls; medians of {args.repeats}")
    report("ScriptedModel", measure(scripted, args.repeats, peak_rss_mb("scripted")))
    if args.skip_openai:
        return None
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None  # piped
    try:
        base_url = server.stdout.readline().strip()
        rss = peak_rss_mb("openai", base_url)
        report(f"openai client -> fake OpenAI server at {base_url} (separate process)",
               measure(lambda latency: openai_model(base_url, latency), args.openai_repeats, rss))
        # The targets above are the engine's; through HTTP the client is the bottleneck. This table shows
        # the same calls without the engine; the CPU ratio is what the engine costs on top of the client.
        print("\n  the same 3,000 calls through the engine and through the bare client (no engine):")
        print(f"  {'scenario':<24} {'engine wall':>12} {'bare wall':>10} {'engine cpu':>11} {'bare cpu':>9} "
              f"{'cpu ratio':>10}")
        for name, engine_wall, bare_wall, engine_cpu, bare_cpu in engine_vs_client(base_url, args.openai_repeats):
            print(f"  {name:<24} {engine_wall:>12.2f} {bare_wall:>10.2f} {engine_cpu:>11.2f} {bare_cpu:>9.2f} "
                  f"{engine_cpu / bare_cpu:>10.2f}", flush=True)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    return None


if __name__ == "__main__":
    main()
