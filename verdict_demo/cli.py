"""`verdict demo` (`python -m verdict_demo`, what `make demo` runs): Verdict end to end on this machine, offline.

Starts verdict-collector and verdict-daemon on 127.0.0.1 with embedded storage in a fresh data dir,
runs an instrumented support-bot app that sends MT-Bench questions through the real `openai` client
to a bundled fake LLM over simulated days, injects a regression into one intent on the last day,
lets the daemon sample, judge, cluster and run drift, then prints a summary and the report's path.
The judge is a deterministic offline heuristic (not an LLM) unless --judge-model names one. Progress
goes to stderr, the summary to stdout; docs/demo.md tells the whole story.

Exit codes: 0 the demo ran (whatever it found); 2 it could not run: the one error envelope
{"error": {"code", "message"}} on stderr (docs/cli.md; codes invalid_config, storage_error,
component_failed, internal_error); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM): every process
the demo started is stopped first. --data-dir has no environment variable: the directory is deleted
and recreated, so a VERDICT_DATA_DIR meant for real data must never reach it.

Example: verdict demo --days 5 --per-day 20 --json > summary.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from verdict_daemon.errors import DaemonError
from verdict_demo.judge import NAME as OFFLINE_JUDGE
from verdict_demo.processes import Interrupted
from verdict_demo.scenario import DEFAULT_CORRUPTED, INTENTS, MIN_DAYS, MIN_PER_DAY, Scenario

EXIT_OK = 0


def _at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    paragraphs = __doc__.split("\n\n")
    parser.description = "\n\n".join(paragraphs[:2])
    parser.epilog = "\n\n".join(paragraphs[2:])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--data-dir", type=Path, default=Path("verdict-demo-data"),
                        help="where the lake, state.duckdb, config, logs and report go; deleted and recreated on "
                             "every run, so it must be a previous demo's dir, empty, or new (default: %(default)s)")
    parser.add_argument("--days", type=_at_least(MIN_DAYS), default=9,
                        help=f"simulated days of traffic (>= {MIN_DAYS}): a 7-day baseline, a 1-day gap and the "
                             "current day by default (default: %(default)s)")
    parser.add_argument("--per-day", type=_at_least(MIN_PER_DAY), default=40,
                        help=f"requests per intent per simulated day (>= {MIN_PER_DAY}; default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0,
                        help="drives the traffic, the fake LLM's answers and the injected corruption; same seed, "
                             "same result (default: %(default)s)")
    parser.add_argument("--corrupt-intent", choices=[i.key for i in INTENTS], default=DEFAULT_CORRUPTED,
                        help="the intent whose answers regress on the last day (default: %(default)s)")
    parser.add_argument("--judge-model", default=os.environ.get("VERDICT_JUDGE_MODEL") or OFFLINE_JUDGE,
                        help="the judge: the deterministic offline judge, or a real LLM such as "
                             "openai/gpt-4o-mini (key from OPENAI_API_KEY; OPENAI_BASE_URL for Ollama, vLLM or "
                             "another OpenAI-compatible server) [env VERDICT_JUDGE_MODEL] (default: "
                             f"{OFFLINE_JUDGE})")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout "
                        "(progress stays on stderr)")


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _signal_line(s) -> str:
    return (f"    {s.kind:<12} {s.cluster} / {s.dimension}: pass rate {_fmt(s.baseline_level, '.2f')} -> "
            f"{_fmt(s.current_level, '.2f')} (n {s.baseline_n} -> {s.current_n}), Cliff's delta "
            f"{_fmt(s.delta, '+.2f')} [{_fmt(s.delta_low, '+.2f')}, {_fmt(s.delta_high, '+.2f')}], "
            f"adjusted p {_fmt(s.adjusted_p, '.2g')}")


def judge_banner(judge_model: str) -> str:
    if judge_model == OFFLINE_JUDGE:
        return (f"Verdict demo. Judge: {OFFLINE_JUDGE}, a deterministic offline heuristic judge, NOT an LLM: it "
                "grades each rubric dimension from visible features of the answer (cut off, off-topic, invented "
                "specifics, leaked data, ignored instructions). Set VERDICT_JUDGE_MODEL=openai/gpt-4o-mini (with "
                "OPENAI_API_KEY, or OPENAI_BASE_URL for a local Ollama/vLLM server) to judge with a real LLM.")
    return f"Verdict demo. Judge: {judge_model} (a real LLM judge; calls leave this machine unless it is local)."


def render_text(summary) -> str:
    tool = Path(sys.executable).parent / "verdict"
    verdict_cmd = str(tool) if tool.exists() else "verdict"
    inj = summary.injected
    lines = [
        "",
        "Summary",
        f"  traces    {summary.traces} in the span lake ({summary.days} simulated days x {len(INTENTS)} intents x "
        f"{summary.per_day} requests)",
        f"  judged    {summary.judged} of {summary.sampled} sampled traces (coverage {summary.coverage_rate:.1%}, "
        f"{summary.judge_errors} judge errors) by {summary.judge_model}"
        + (" (offline heuristic, not an LLM)" if summary.offline_judge else ""),
        f"  injected  day {inj.day}: {inj.kind} into {inj.share:.0%} of {inj.intent} answers "
        f"({inj.corrupted_answers} answers corrupted)",
        f"  drift     closing decision as of {(summary.drift_as_of or '-').replace('T', ' ')} UTC (the last full UTC day, as the daemon takes "
        f"it at midnight): {summary.cells} cells (intent x dimension), {summary.tested} tested, Benjamini-Hochberg "
        f"at alpha {summary.drift_alpha or 0:g}" + (f" ({summary.not_tested})" if summary.not_tested else ""),
        f"  signals   {len(summary.adverse)} adverse, {len(summary.signals) - len(summary.adverse)} other",
        *(_signal_line(s) for s in summary.signals),
    ]
    if summary.injected_found and not summary.unexpected:
        lines.append(f"  result    the injected regression in {inj.intent} was found, and no other intent was flagged")
    elif summary.injected_found:
        lines.append(f"  result    the injected regression was found, plus {len(summary.unexpected)} other signal(s)")
    else:
        lines.append(f"  result    the injected regression in {inj.intent} was NOT flagged")
    lines.append(f"  alerts    {summary.alerts} logged by verdict-daemon (the `signal tenant=...` lines in "
                 f"{Path(summary.data_dir) / 'logs' / 'daemon.log'})")
    lines.append(f"  report    {summary.report}" if summary.report else f"  report    unavailable: {summary.report_note}")
    lines += [
        f"  logs      {Path(summary.data_dir) / 'logs'}",
        f"  explore   {verdict_cmd} sql \"SELECT intent_key, dimension, value, count(*) FROM judgments GROUP BY ALL "
        f"ORDER BY ALL\" --data-dir {summary.data_dir}",
        f"  browse    {verdict_cmd} ui --data-dir {summary.data_dir} --tenant {summary.tenant_id}",
        f"  took      {summary.elapsed_seconds:.0f} s",
    ]
    return "\n".join(lines)


def _check_judge_model(judge_model: str) -> None:
    """A bad model string or a missing API key fails here, before anything starts."""
    from verdict_daemon.service.evaluators import resolve_judge_model

    try:
        resolve_judge_model(judge_model)
    except DaemonError as exc:
        raise DaemonError(exc.code, f"judge model {judge_model!r} (--judge-model or VERDICT_JUDGE_MODEL): "
                          f"{exc.message}") from None


def run(args: argparse.Namespace) -> int:
    received: list[int] = []

    def on_signal(signum: int, _frame) -> None:
        received.append(signum)  # the run notices it at its next safe point (within a second)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    started = time.monotonic()

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    try:
        scenario = Scenario(days=args.days, per_day=args.per_day, seed=args.seed,
                            corrupted_intent=args.corrupt_intent)
        from verdict_demo.orchestrator import DemoOptions, DemoRun, check_data_dir

        _check_judge_model(args.judge_model)
        check_data_dir(args.data_dir)
        print(judge_banner(args.judge_model), file=sys.stderr, flush=True)
        summary = DemoRun(DemoOptions(args.data_dir, scenario, args.judge_model), progress,
                          lambda: received[0] if received else None).run()
    except Interrupted as stop:
        print(f"verdict demo: interrupted ({signal.Signals(stop.signum).name}); every process it started has been "
              "stopped", file=sys.stderr)
        return 128 + stop.signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print(json.dumps(summary.to_json()) if args.json else render_text(summary))
    return EXIT_OK
