"""Judges: Bradley-Terry over pairwise judgments, and the cost of the judges on top of the engine.

Prints each figure with its target and the ratio (figure / target; for "at least" targets target /
figure, so a ratio <= 1.00 means the target is met):

  * Bradley-Terry from 2,000 pairwise judgments of 8 models with 1,000 bootstrap resamples, through
    `verdict.judges.ranking.rank_models` (judgments -> comparisons -> verdict.stats fit): <= 1 s
    (a peer takes 23 s for the fit). The judgments come from a real PairwiseJudge over an instant
    scripted model (4,000 rounds), whose time is printed too;
  * rubric Judge throughput with an instant scripted model (JSON parse, schema validation and the
    evidence-quote check per call), 2,000 items: calls per second, for reference (no target).

Usage: python bench/judges.py [--repeats N]
Timings are medians over the repeats; the machine is shared, so read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = [f"model-{i}" for i in range(8)]
COMPARISONS = 2_000
RESAMPLES = 1_000
BT_TARGET_S = 1.0
ITEMS = 2_000


def pairwise_judgments(seed: int = 7):
    """2,000 comparisons of 8 models whose true strengths rise with their index; the scripted judge
    prefers the stronger response with the Bradley-Terry probability, with 10% ties."""
    from verdict.judges.pairwise import PairwiseJudge
    from verdict.models.scripted import ScriptedModel

    rng = random.Random(seed)
    plan, items = {}, []
    for n in range(COMPARISONS):
        a, b = rng.sample(range(len(MODELS)), 2)
        p_a = 1 / (1 + 1.5 ** (b - a))  # strength 1.5**index
        outcome = "C" if rng.random() < 0.1 else ("A" if rng.random() < p_a else "B")
        plan[f"answer {n} by {a}"] = outcome
        items.append((MODELS[a], MODELS[b], ("q", f"answer {n} by {a}", f"answer {n} by {b}")))

    def reply(request):
        text = request.messages[-1].content
        first = text.split("<response_a>\n", 1)[1].split("\n</response_a>", 1)[0]
        if first in plan:  # response_a of the item is shown first: round AB
            return f"[[{plan[first]}]]"
        second = text.split("<response_b>\n", 1)[1].split("\n</response_b>", 1)[0]
        return f"[[{ {'A': 'B', 'B': 'A', 'C': 'C'}[plan[second]] }]]"

    judge = PairwiseJudge(ScriptedModel(reply), retries=0)
    started = time.perf_counter()
    judgments = judge.compare_many([item for _, _, item in items], max_workers=16)
    elapsed = time.perf_counter() - started
    return [(a, b, j) for (a, b, _), j in zip(items, judgments, strict=True)], elapsed


def judge_throughput() -> float:
    from verdict.judges.judge import Judge
    from verdict.judges.rubric import DEFAULT_RUBRIC
    from verdict.models.scripted import ScriptedModel

    reply = json.dumps({d: {"rationale": "fine", "evidence": ["the answer"], "verdict": "PASS"}
                        for d in DEFAULT_RUBRIC.dimension_names})
    judge = Judge(ScriptedModel([reply]), retries=0)
    items = [{"answer": f"This is the answer number {i}.", "query": "q", "context": "c"} for i in range(ITEMS)]
    started = time.perf_counter()
    judgments = judge.grade_many(items, max_workers=16)
    elapsed = time.perf_counter() - started
    assert len(judgments) == ITEMS and all(j.is_usable for j in judgments)
    return ITEMS / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from verdict.judges.ranking import rank_models

    comparisons, judging_s = pairwise_judgments()
    fit_times = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        ranking = rank_models(comparisons, n_resamples=RESAMPLES, seed=1)
        fit_times.append(time.perf_counter() - started)
    fit_s = statistics.median(fit_times)
    order = sorted(MODELS, key=ranking.fit.rating)
    print(f"Bradley-Terry, {COMPARISONS} judgments of {len(MODELS)} models, {RESAMPLES} resamples: "
          f"{fit_s:.3f} s (target <= {BT_TARGET_S:.1f} s, ratio {fit_s / BT_TARGET_S:.2f}); "
          f"used {ranking.used}, ties {ranking.ties}, inconsistent {ranking.inconsistent}, "
          f"unestimable resamples {ranking.fit.unestimable_resamples}; "
          f"order recovered: {order == MODELS}")
    print(f"  producing the judgments (4,000 PairwiseJudge rounds, instant scripted model): {judging_s:.2f} s")
    rates = [judge_throughput() for _ in range(args.repeats)]
    print(f"Judge (rubric, 5 dimensions, evidence check), instant scripted model, {ITEMS} items: "
          f"{statistics.median(rates):,.0f} calls/s (median of {args.repeats}; no target)")


if __name__ == "__main__":
    main()
