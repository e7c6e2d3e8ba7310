"""Per-call and per-chunk overhead of LLM tracing, side by side in one run.

Every mode runs in its own subprocess with the real `openai` client over an in-process
httpx2.MockTransport (no sockets), a ~1 KB prompt, and the same OpenTelemetry pipeline shape
(SDK TracerProvider + BatchSpanProcessor + an exporter that discards). Modes:

  none             uninstrumented (noise floor)
  verdict          verdict.init() + instrument(), content capture and redaction ON, intent_context
  otel-openai-v2   opentelemetry-instrumentation-openai-v2 (side venv), content on spans
  openinference    openinference-instrumentation-openai (side venv)

Peers run from a side venv (default /tmp/peer-venv, --peer-python to change), never from the
project's .venv. Create it with:
  python -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install openai==<same> opentelemetry-sdk \
    opentelemetry-instrumentation-openai-v2 'opentelemetry-util-genai==0.4b0' httpx openinference-instrumentation-openai

Each subprocess toggles its instrumentation on and off in alternating batches (paired measurement:
load drifting on a shared machine hits both sides alike). Figures: median added calling-thread CPU
time per non-streamed call, added time per stream chunk (slope between a short and a long stream,
so per-call costs cancel out), and whole-process CPU added per call including background threads
(where Verdict's deferred content and export work shows up). Medians over rounds. Mode `none`
toggles nothing: its figures are the noise floor.

  python bench/sdk_overhead.py [--rounds 3] [--calls 2000] [--peer-python /tmp/peer-venv/bin/python]

With --rates (calls per second, e.g. 250,500,1000,2000) it instead measures sustained load: one thread
calls at each rate for --rate-seconds (paced, non-streamed, instrumentation on), then flushes, and the
table gives per mode the share of calls whose span was exported, and in brackets the share exported
with its content (Verdict sheds content before it drops spans: docs/tracing.md, "Under overload").
Every mode keeps its default batch processor settings. --openinference-python runs OpenInference from
another venv than --peer-python.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

ROOT = Path(__file__).resolve().parent.parent
SHORT, LONG = 10, 210  # stream lengths (content chunks) for the per-chunk slope
# The input content attribute of each mode's spans: GenAI semconv (Verdict, otel-openai-v2), OpenInference.
CONTENT_KEYS = frozenset({"gen_ai.input.messages", "input.value", "llm.input_messages.0.message.content"})

SYSTEM = "You are the billing assistant of Acme Corp. Answer briefly, cite the invoice number, never guess amounts."
USER = (
    "Hello, I was charged twice for my March subscription (invoice INV-2024-0383, 49.00 EUR) and I need "
    "the duplicate refunded. My account e-mail is jane.doe@example.com and you can reach me on "
    "+44 20 7946 0958 in the afternoon. I already contacted support last week but the ticket was closed "
    "without an answer. The first charge went through on the 3rd and the second one on the 4th, both to "
    "the same card. Could you confirm the refund and tell me how long it will take to appear on my "
    "statement? Also, please make sure the plan stays on the annual discount I signed up for in 2023, "
    "because the last invoice seemed to show the monthly price instead of the discounted one. I would "
    "also like a copy of both invoices as PDF. Thank you very much for your help with this issue."
)
MESSAGES: list[ChatCompletionMessageParam] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]


# -- worker (one mode per process) -------------------------------------------------------------------


def _transport():  # pragma: no cover - runs in the subprocess
    import httpx2

    completion = json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Your duplicate charge will be refunded within 5 days."}}],
        "usage": {"prompt_tokens": 230, "completion_tokens": 12, "total_tokens": 242},
    }).encode()

    def sse(n: int) -> bytes:
        head = '{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini",'
        lines = [f'data: {head}"choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}\n\n']
        lines += [f'data: {head}"choices":[{{"index":0,"delta":{{"content":"tok{i} "}},"finish_reason":null}}]}}\n\n' for i in range(n)]
        lines.append(f'data: {head}"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}\n\n')
        lines.append(f'data: {head}"choices":[],"usage":{{"prompt_tokens":230,"completion_tokens":{n},"total_tokens":{230 + n}}}}}\n\n')
        lines.append("data: [DONE]\n\n")
        return "".join(lines).encode()

    streams = {SHORT: sse(SHORT), LONG: sse(LONG)}

    def handler(request):
        body = json.loads(request.content)
        if body.get("stream"):
            n = body.get("max_tokens", SHORT)
            return httpx2.Response(200, content=streams[n], headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, content=completion, headers={"content-type": "application/json"})

    return httpx2.Client(transport=httpx2.MockTransport(handler))


class _Discard:  # pragma: no cover - subprocess
    """An exporter that counts and discards (shared by every mode)."""

    def __init__(self):
        self.count = 0
        self.with_content = 0

    def export(self, spans):
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.count += len(spans)
        self.with_content += sum(any(key in CONTENT_KEYS for key in span.attributes or ()) for span in spans)
        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis=0):
        return True


def _otel_pipeline(exporter):  # pragma: no cover - subprocess
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


@dataclass(frozen=True)
class _Switch:  # pragma: no cover - runs in the subprocess
    """How a mode turns its instrumentation on and off, scopes one call, and flushes its spans."""

    toggle: Callable[[bool], object]
    scope: Callable[[], AbstractContextManager]
    flush: Callable[[], object]


def _switch(mode: str, exporter) -> _Switch:  # pragma: no cover - runs in the subprocess
    if mode == "verdict":
        import verdict.tracing as vt

        vt.init(service_name="bench", exporter=exporter)
        return _Switch(toggle=lambda on: vt.instrument() if on else vt.uninstrument(),
                       scope=lambda: vt.intent_context("billing.v1"), flush=vt.flush)
    if mode in ("otel-openai-v2", "openinference"):
        provider = _otel_pipeline(exporter)
        if mode == "otel-openai-v2":
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        else:
            from openinference.instrumentation.openai import OpenAIInstrumentor
        instrumentor = OpenAIInstrumentor()
        return _Switch(toggle=lambda on: instrumentor.instrument(tracer_provider=provider) if on
                       else instrumentor.uninstrument(), scope=nullcontext, flush=provider.force_flush)
    return _Switch(toggle=lambda on: None, scope=nullcontext, flush=lambda: None)


def _prompts(unique: bool) -> Callable[[], list[ChatCompletionMessageParam]]:  # pragma: no cover - subprocess
    """The messages of each non-streamed call: the same list every time, or (unique) a user message that
    no earlier call sent, so nothing an instrumentation remembers from earlier calls applies."""
    if not unique:
        return lambda: MESSAGES
    counter = iter(range(1 << 62))
    return lambda: [MESSAGES[0], {"role": "user", "content": f"{USER} (Reference {next(counter)}.)"}]


def worker(mode: str, calls: int, streams: int, unique: bool = False) -> dict:  # pragma: no cover - subprocess
    """Paired measurement: batches with the mode's instrumentation on and off alternate in this one
    process, so machine load drifting during the run hits both sides alike. Mode `none` never turns
    anything on (its added figures measure the noise floor)."""
    from opentelemetry.sdk.trace.export import SpanExporter

    exporter = type("Discard", (_Discard, SpanExporter), {})()
    switch = _switch(mode, exporter)

    import openai

    client = openai.OpenAI(api_key="sk-bench", base_url="http://bench.local/v1", http_client=_transport())
    chat = client.chat.completions
    # CPU time of the calling thread: what instrumentation adds to the caller, not inflated by the
    # scheduler on a shared machine. Background export threads show up in cpu_us instead.
    clock = time.thread_time_ns
    prompts = _prompts(unique)

    def one() -> int:
        messages = prompts()
        start = clock()
        with switch.scope():
            chat.create(model="gpt-4o-mini", messages=messages, temperature=0.2)
        return clock() - start

    def stream(n: int) -> int:
        start = clock()
        with switch.scope():
            for _ in chat.create(model="gpt-4o-mini", messages=MESSAGES, stream=True, max_tokens=n,
                                 stream_options={"include_usage": True}):
                pass
        return clock() - start

    samples = _paired_samples(switch, one, stream, calls, streams)
    return {"mode": mode, **_added(samples), "spans": exporter.count, "openai": openai.__version__}


def _paired_samples(switch: _Switch, one: Callable[[], int], stream: Callable[[int], int], calls: int,
                    streams: int) -> dict:  # pragma: no cover - runs in the subprocess
    """After a warm-up, alternating batches on and off: per side the call, short and long stream times
    and the process CPU time of the calls and their export."""
    switch.toggle(True)
    for _ in range(100):
        one()
        stream(SHORT)
    switch.flush()
    batches = 25
    samples: dict = {on: {"call": [], "short": [], "long": [], "cpu": 0.0} for on in (True, False)}
    for _ in range(batches):
        for on in (True, False):
            switch.toggle(on)
            side = samples[on]
            cpu0 = time.process_time()
            side["call"] += [one() for _ in range(max(calls // batches, 1))]
            switch.flush()  # export work of this batch is charged to it
            side["cpu"] += time.process_time() - cpu0
            side["short"] += [stream(SHORT) for _ in range(max(streams // batches, 1))]
            side["long"] += [stream(LONG) for _ in range(max(streams // batches, 1))]
            switch.flush()
    return samples


def _added(samples: dict) -> dict:  # pragma: no cover - runs in the subprocess
    """Medians of the off side and what the on side adds: per call, per stream chunk, CPU per call."""
    med = {on: {k: statistics.median(v) / 1e3 for k, v in d.items() if k != "cpu"} for on, d in samples.items()}
    per_chunk = {on: (m["long"] - m["short"]) / (LONG - SHORT) for on, m in med.items()}
    n_calls = len(samples[True]["call"])
    return {
        "base_us": med[False]["call"],
        "added_us": med[True]["call"] - med[False]["call"],
        "added_chunk_us": per_chunk[True] - per_chunk[False],
        "added_cpu_us": (samples[True]["cpu"] - samples[False]["cpu"]) / n_calls * 1e6,
    }


def rate_worker(mode: str, rate: float, seconds: float) -> dict:  # pragma: no cover - subprocess
    """One thread calling at `rate` per second for `seconds` (paced by sleeping), then a flush: how many
    spans were exported, and how many with content."""
    from opentelemetry.sdk.trace.export import SpanExporter

    exporter = type("Discard", (_Discard, SpanExporter), {})()
    switch = _switch(mode, exporter)
    import openai

    chat = openai.OpenAI(api_key="sk-bench", base_url="http://bench.local/v1", http_client=_transport()).chat.completions
    switch.toggle(True)
    calls = int(rate * seconds)
    start = time.perf_counter()
    for i in range(calls):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        with switch.scope():
            chat.create(model="gpt-4o-mini", messages=MESSAGES, temperature=0.2)
    achieved = calls / (time.perf_counter() - start)
    switch.flush()
    return {"mode": mode, "calls": calls, "achieved": achieved, "exported": exporter.count,
            "with_content": exporter.with_content}


# -- driver ----------------------------------------------------------------------------------------


def run_mode(python: str, mode: str, calls: int, streams: int, rate: tuple[float, float] | None = None,
             unique: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    args = ["--calls", str(calls), "--streams", str(streams)] if rate is None else [
        "--rate", str(rate[0]), "--rate-seconds", str(rate[1])]
    if unique:
        args.append("--unique-prompts")
    proc = subprocess.run(
        [python, str(Path(__file__).resolve()), "--worker", mode, *args],
        capture_output=True, text=True, env=env, timeout=900,
    )
    if proc.returncode != 0:
        return {"mode": mode, "error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker")
    parser.add_argument("--calls", type=int, default=2000, help="non-streamed calls per side (on/off)")
    parser.add_argument("--streams", type=int, default=100, help="streams per length per side")
    parser.add_argument("--rounds", type=int, default=3, help="subprocesses per mode")
    parser.add_argument("--peer-python", default="/tmp/peer-venv/bin/python")
    parser.add_argument("--openinference-python", help="OpenInference's venv python (default: --peer-python)")
    parser.add_argument("--rates", help="sustained-load mode: calls per second, comma-separated")
    parser.add_argument("--rate", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--rate-seconds", type=float, default=5.0, help="seconds of calls per rate")
    parser.add_argument("--unique-prompts", action="store_true",
                        help="every non-streamed call sends a user message no earlier call sent")
    args = parser.parse_args()
    if args.worker:
        result = (worker(args.worker, args.calls, args.streams, args.unique_prompts) if args.rate is None
                  else rate_worker(args.worker, args.rate, args.rate_seconds))
        print(json.dumps(result))
        return

    plan = [("none", sys.executable), ("verdict", sys.executable)]
    peers_available = Path(args.peer_python).exists()
    if peers_available:
        plan += [("otel-openai-v2", args.peer_python), ("openinference", args.openinference_python or args.peer_python)]
    if args.rates:
        _print_rates(plan[1:], [float(r) for r in args.rates.split(",")], args.rate_seconds)
        return
    results: dict[str, list[dict]] = {}
    for _ in range(args.rounds):  # rounds interleave modes so drift in machine load hits all of them
        for mode, python in plan:
            results.setdefault(mode, []).append(run_mode(python, mode, args.calls, args.streams,
                                                         unique=args.unique_prompts))

    print(f"sdk_overhead: openai {_first(results, 'openai')}, real client over an in-process mock transport, "
          f"~{len(SYSTEM) + len(USER)} B prompt; each mode in its own subprocess ({args.rounds} rounds), "
          f"instrumentation toggled on/off in alternating batches ({args.calls} calls, {args.streams} streams "
          f"of {SHORT} and {LONG} chunks per side); medians of the rounds' paired medians; "
          f"{'a new user message every call' if args.unique_prompts else 'the same messages every call'}; "
          f"load {os.getloadavg()[0]:.1f}")
    print("added = calling-thread CPU time added per call; cpu incl. background = whole-process CPU added per call")
    print(f"{'mode':<16}{'baseline µs':>12}{'added µs':>10}{'ratio':>8}{'cpu incl. bg µs':>17}{'added/chunk µs':>16}{'spans':>8}")
    rows: dict[str, tuple[float, float, bool]] = {}
    whole: dict[str, float] = {}
    for mode, _python in plan:
        errors = [r["error"] for r in results[mode] if "error" in r]
        if errors:
            print(f"{mode:<16} FAILED: {errors[0]}")
            continue
        med = {k: statistics.median(r[k] for r in results[mode])
               for k in ("base_us", "added_us", "added_chunk_us", "added_cpu_us")}
        spans = min(r["spans"] for r in results[mode])
        works = mode == "none" or spans > 0
        rows[mode] = (med["added_us"], med["added_chunk_us"], works)
        whole[mode] = med["added_cpu_us"]
        note = "" if works else "  (produced no spans: does not work with this openai)"
        print(f"{mode:<16}{med['base_us']:>12.1f}{med['added_us']:>10.1f}"
              f"{(med['base_us'] + med['added_us']) / med['base_us']:>8.2f}{med['added_cpu_us']:>17.1f}"
              f"{med['added_chunk_us']:>16.3f}{spans:>8}{note}")
    if not peers_available:
        print(f"peers: side venv {args.peer_python} not found (see the module docstring to create it)")
    if "verdict" in rows:
        added, per_chunk, _ = rows["verdict"]
        peer_added = {k: v[0] for k, v in rows.items() if k not in ("none", "verdict") and v[2]}
        verdict_line = (f"targets: verdict adds {added:.1f} µs per call (<= 70: {'PASS' if added <= 70 else 'FAIL'}), "
                        f"{per_chunk:.3f} µs per chunk (<= 2: {'PASS' if per_chunk <= 2 else 'FAIL'})")
        if peer_added:
            best = min(peer_added.values())
            verdict_line += (f", below every working peer (cheapest {best:.1f} µs, ratio {added / best:.2f}): "
                             f"{'PASS' if added < best else 'FAIL'}")
        print(verdict_line)
    if "verdict" in whole and whole.get("otel-openai-v2", 0) > 0:
        ratio = whole["verdict"] / whole["otel-openai-v2"]
        print(f"whole-process CPU per call (calling + export threads): verdict {whole['verdict']:.1f} µs, "
              f"{ratio:.2f}x otel-openai-v2's {whole['otel-openai-v2']:.1f} µs (<= 0.5: {'PASS' if ratio <= 0.5 else 'FAIL'})")


def _print_rates(plan: list[tuple[str, str]], rates: list[float], seconds: float) -> None:
    print(f"sdk_overhead --rates: one thread calling at each rate for {seconds:g} s (real openai client, mock "
          f"transport), then a flush; spans exported per call, in brackets exported with content, then the "
          f"call rate the mode reached; load "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'calls/s':>8}" + "".join(f"{mode:>30}" for mode, _ in plan))
    for rate in rates:
        cells = []
        for mode, python in plan:
            r = run_mode(python, mode, 0, 0, (rate, seconds))
            cells.append("FAILED" if "error" in r else f"{r['exported'] / r['calls']:.1%} "
                         f"({r['with_content'] / r['calls']:.1%}) {r['achieved']:.0f}/s")
        print(f"{rate:>8g}" + "".join(f"{c:>30}" for c in cells))


def _first(results: dict[str, list[dict]], key: str) -> str:
    return next((str(r[key]) for rs in results.values() for r in rs if key in r), "?")


if __name__ == "__main__":
    main()
