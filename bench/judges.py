"""Judges: Bradley-Terry over pairwise judgments, and the cost of the judges on top of the engine.

Prints each figure with its target and the ratio (figure / target; for "at least" targets target /
figure, so a ratio <= 1.00 means the target is met):

  * Bradley-Terry from 2,000 pairwise judgments of 8 models with 1,000 bootstrap resamples, through
    `verdict.judges.ranking.rank_models` (judgments -> comparisons -> verdict.stats fit): <= 1 s
    (a peer takes 23 s for the fit). The judgments come from a real PairwiseJudge over an instant
    scripted model (4,000 rounds), whose time is printed too;
  * rubric Judge throughput with an instant scripted model (JSON parse, schema validation and the
    evidence-quote check per call), 2,000 items: calls per second, for reference (no target);
  * with --realmodel: each judge mode against a real llama.cpp server with SmolLM2-135M (the real-model
    tier's server, `make realmodel-env`): calls/s, median call latency, usable share and tokens per usable
    verdict, so the cost of one call per dimension shows next to one call for the whole rubric (no
    target: the figures describe a 135M model on this machine's two cores); then the per-model figures
    of docs/models.md: share of parseable replies (and of usable ones), seconds per judgment and agreement (Gwet's AC1 and
    Cohen's kappa, with n) with the small human-labelled set bench/data/relevance_labelled.jsonl, graded
    by a one-dimension (relevance) judge. Under AGREEMENT_MIN_N usable pairs the agreement is printed but
    marked "insufficient": its interval is too wide to rank a judge.

Usage: python bench/judges.py [--repeats N] [--realmodel [--items N] [--labelled N]]
Timings are medians over the repeats; the machine is shared, so read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


class _Timed:
    """A model that records each call's latency (the judges see the model unchanged)."""

    def __init__(self, model) -> None:
        self.model = model
        self.latencies: list[float] = []
        self.name, self.supports_json_schema, self.supports_logprobs = \
            model.name, model.supports_json_schema, model.supports_logprobs

    def complete(self, request):
        started = time.perf_counter()
        try:
            return self.model.complete(request)
        finally:
            self.latencies.append(time.perf_counter() - started)


REAL_MODES = 4
REAL_ITEMS = [
    ("What is the capital of France?", "Paris is the capital of France.", "Paris is the capital of France."),
    ("How do I reset my password?", "Open Settings, choose Security, then Reset password.",
     "Passwords are reset under Settings > Security."),
    ("What is 12 times 3?", "12 times 3 is 36.", "Multiplication: 12 x 3 = 36."),
    ("Which planet is largest?", "Mars is the largest planet.", "Jupiter is the largest planet."),
    ("Translate 'thank you' into French.", "Merci.", "'Thank you' in French is 'merci'."),
    ("How long is the warranty?", "I cannot help with that.", "The warranty lasts two years."),
]


def _real_modes(model, items: int):
    """(mode, run() -> (usable verdicts, tokens)) for each judge mode on the first `items` items."""
    from verdict.extract import TokenProbabilityExtractor
    from verdict.graph.pipeline import Pipeline
    from verdict.judges.judge import Judge
    from verdict.judges.pairwise import PairwiseJudge
    from verdict.judges.units import JudgeUnit
    from verdict.scale import DiscreteScale

    batch = [{"query": q, "answer": a, "context": c} for q, a, c in (REAL_ITEMS * 4)[:items]]

    def rubric(per_dimension: bool):
        def run():
            judgments = Judge(model, per_dimension=per_dimension, retries=0, seed=0).grade_many(batch, max_workers=1)
            return (sum(len(j.dimensions) for j in judgments),
                    sum(j.usage.input_tokens + j.usage.output_tokens for j in judgments))
        return run

    def pairwise():
        judgments = PairwiseJudge(model, retries=0, max_tokens=64, seed=0).compare_many(
            [(b["query"], b["answer"], b["context"]) for b in batch], max_workers=1)
        return (sum(j.is_usable for j in judgments),
                sum(j.usage.input_tokens + j.usage.output_tokens for j in judgments))

    def token_probability():
        unit = JudgeUnit(DiscreteScale((1, 5))).prompt(
            "Question: {source.query}\nAnswer: {source.answer}\nRate the answer from 1 (bad) to 5 (good). "
            "Reply with one digit.").extract(TokenProbabilityExtractor()).via(model, retries=0, max_tokens=1,
                                                                              temperature=0)
        rows = (Pipeline() >> unit).run_from_dataset(batch, max_workers=1)
        return sum(row.ok for row in rows), sum(row.usage.input_tokens + row.usage.output_tokens for row in rows)

    return [("rubric, all dimensions in one call", rubric(False), 5),
            ("rubric, one dimension per call", rubric(True), 5),
            ("pairwise, two rounds", pairwise, 1),
            ("token probability, 1-5 score", token_probability, 1)]


LABELLED_SET = ROOT / "bench" / "data" / "relevance_labelled.jsonl"
AGREEMENT_MIN_N = 30  # usable pairs under which a coefficient's 95 % interval is too wide to read


@dataclass(frozen=True)
class AgreementFigures:
    """A judge on the labelled set: how many replies it could read, how long, and how it agrees."""

    items: int
    parseable: int  # replies that are JSON of the asked shape (DimensionReply), usable or not
    usable: int  # judgments with a verdict: parseable and passing the reading rules (retries=0: one reply each)
    seconds_per_judgment: float
    report: Any  # verdict.agreement.AgreementReport over the usable pairs
    failures: tuple[tuple[str, int], ...] = ()  # why replies were unusable: (reason, count), most common first
    example_reply: str | None = None  # one unusable reply as the model gave it (cut), to show what it said


_QUOTED = re.compile(r"'[^']*'")


def _failure(error: str) -> str:
    """An error's reason without the kept reply and with quoted text elided, so equal reasons group."""
    return _QUOTED.sub("'…'", error.split(" | the reply", 1)[0])


def labelled_agreement(model, items: int | None = None) -> AgreementFigures:
    """Grade the first `items` examples of LABELLED_SET for relevance, one call per judgment, one at a time."""
    from verdict.agreement import LabelledItem, evaluate_agreement
    from verdict.judges.judge import DimensionReply, Judge
    from verdict.judges.rubric import DEFAULT_RUBRIC, Rubric
    from verdict.sentinel import load_sentinel_set

    rubric = Rubric("relevance-only", "1", (DEFAULT_RUBRIC.dimension("relevance"),))
    examples = load_sentinel_set(LABELLED_SET, rubric).examples[:items]
    judge = Judge(model, rubric, per_dimension=True, retries=0, seed=0)
    started = time.perf_counter()
    judgments = judge.grade_many([example.item() for example in examples], max_workers=1)
    elapsed = time.perf_counter() - started
    rows = [LabelledItem(example.id, example.label_map["relevance"],
                         str(judgment.verdicts["relevance"]) if judgment.is_usable else "ERROR")
            for example, judgment in zip(examples, judgments, strict=True)]
    failed = [j for j in judgments if not j.is_usable]

    def parses(reply: str | None) -> bool:
        try:
            DimensionReply.model_validate_json(reply or "")
        except ValueError:
            return False
        return True

    usable = len(judgments) - len(failed)
    return AgreementFigures(len(examples), usable + sum(parses(j.reply) for j in failed), usable,
                            elapsed / len(examples),
                            evaluate_agreement(rows),
                            tuple(Counter(_failure(j.error or str(j.status)) for j in failed).most_common()),
                            next((j.reply[:160] for j in failed if j.reply), None))


def agreement_line(figures: AgreementFigures) -> str:
    """The figures as docs/models.md shows them; "insufficient" under AGREEMENT_MIN_N usable pairs."""
    report = figures.report
    pairs = report.raw_agreement.trials

    def coefficient(name: str, value) -> str:
        return f"{name} n/a" if value is None else f"{name} {value.value:.2f} [{value.low:.2f}, {value.high:.2f}]"

    verdict = "insufficient" if pairs < AGREEMENT_MIN_N else "readable"
    return (f"parseable {figures.parseable}/{figures.items} ({figures.parseable / figures.items:.0%}), usable "
            f"{figures.usable}/{figures.items} ({figures.usable / figures.items:.0%}), "
            f"{figures.seconds_per_judgment:.2f} s per judgment; agreement on n={pairs} usable pairs "
            f"({verdict}{f': n < {AGREEMENT_MIN_N}' if pairs < AGREEMENT_MIN_N else ''}): "
            f"{coefficient('AC1', report.ac1)}, {coefficient('kappa', report.kappa)}, raw agreement "
            f"{report.raw_agreement.successes}/{pairs}"
            + "".join(f"\n    unusable {count}x: {reason}" for reason, count in figures.failures)
            + (f"\n    e.g. the reply {figures.example_reply!r}" if figures.example_reply else ""))


def real_model(items: int, labelled: int | None) -> None:
    import tempfile

    from tests.realmodel.server import LlamaServer
    from verdict.models.openai_model import OpenAIModel

    with tempfile.TemporaryDirectory() as tmp, LlamaServer(Path(tmp) / "server.log") as server:
        if items:
            print(f"Judges against llama.cpp ({server.model}, n_ctx {server.context_tokens}), {items} items, "
                  "one request at a time (no targets: a 135M model on two shared cores):")
        for index in range(REAL_MODES if items else 0):  # --items 0: only the labelled set
            model = _Timed(OpenAIModel(server.model, base_url=server.base_url, supports_json_schema=False,
                                       rate_limits=None, timeout=600.0))  # a fresh client per mode: its own latencies
            mode, run, verdicts_per_item = _real_modes(model, items)[index]
            started = time.perf_counter()
            usable, tokens = run()
            elapsed = time.perf_counter() - started
            calls = len(model.latencies)
            possible = items * verdicts_per_item
            per_usable = f"{tokens / usable:,.0f}" if usable else "n/a (none usable)"
            print(f"  {mode}: {calls} calls, {calls / elapsed:.2f} calls/s, median latency "
                  f"{statistics.median(model.latencies):.2f} s, usable {usable}/{possible} "
                  f"({usable / possible:.0%}), tokens per usable verdict {per_usable} ({tokens:,} tokens)")
        plain = OpenAIModel(server.model, base_url=server.base_url, supports_json_schema=False, rate_limits=None,
                            timeout=600.0)
        figures = labelled_agreement(plain, labelled)
        print(f"{server.model} on {LABELLED_SET.relative_to(ROOT)} (relevance, one call per judgment): "
              f"{agreement_line(figures)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--realmodel", action="store_true", help="only the judge modes against llama.cpp")
    parser.add_argument("--items", type=int, default=6, help="items per judge mode with --realmodel (0: none)")
    parser.add_argument("--labelled", type=int, default=None,
                        help="labelled examples graded with --realmodel (default: all of LABELLED_SET)")
    args = parser.parse_args()
    if args.realmodel:
        real_model(args.items, args.labelled)
        return

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
