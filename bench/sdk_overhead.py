"""Per-call and per-chunk overhead of LLM tracing, side by side in one run.

Every mode runs in its own subprocess with the real `openai` client over an in-process
httpx2.MockTransport (no sockets), a ~1 KB prompt, and the same OpenTelemetry pipeline shape
(SDK TracerProvider + BatchSpanProcessor + an exporter that discards). Modes:

  none             uninstrumented (this venv)
  verdict          verdict.init() + instrument(), content capture and redaction ON, intent_context
  none@peer        uninstrumented, in the side venv of the peers (baseline for them)
  otel-openai-v2   opentelemetry-instrumentation-openai-v2 (side venv), content on spans
  openinference    openinference-instrumentation-openai (side venv)

Peers run from a side venv (default /tmp/peer-venv, --peer-python to change), never from the
project's .venv. Create it with:
  python -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install openai==<same> opentelemetry-sdk \
    opentelemetry-instrumentation-openai-v2 'opentelemetry-util-genai==0.4b0' httpx openinference-instrumentation-openai

Figures: p50 added latency per non-streamed call (vs the baseline of the same interpreter), added
time per stream chunk (slope between a short and a long stream, so per-call costs cancel out), and
CPU per call including background threads (where deferred export work shows up). Medians over rounds.

  python bench/sdk_overhead.py [--rounds 3] [--calls 2000] [--peer-python /tmp/peer-venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHORT, LONG = 10, 210  # stream lengths (content chunks) for the per-chunk slope

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
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]


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

    def export(self, spans):
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.count += len(spans)
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


def worker(mode: str, calls: int, streams: int) -> dict:  # pragma: no cover - subprocess
    import contextlib

    from opentelemetry.sdk.trace.export import SpanExporter

    exporter = type("Discard", (_Discard, SpanExporter), {})()
    scope = contextlib.nullcontext
    flush = lambda: None  # noqa: E731
    if mode == "verdict":
        import verdict.tracing as vt

        vt.init(service_name="bench", exporter=exporter)
        vt.instrument()
        scope = lambda: vt.intent_context("billing.v1")  # noqa: E731
        flush = vt.flush
    elif mode == "otel-openai-v2":
        provider = _otel_pipeline(exporter)
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
        flush = provider.force_flush
    elif mode == "openinference":
        provider = _otel_pipeline(exporter)
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
        flush = provider.force_flush

    import openai

    client = openai.OpenAI(api_key="sk-bench", base_url="http://bench.local/v1", http_client=_transport())
    create = client.chat.completions.create
    # CPU time of the calling thread: what instrumentation adds to the caller, and unlike wall time
    # not inflated by the scheduler on a shared, loaded machine. Background export threads are excluded
    # here and show up in cpu/call.
    clock = time.thread_time_ns
    wall_clock = time.perf_counter_ns
    walls: list[int] = []

    def one() -> int:
        wall, start = wall_clock(), clock()
        with scope():
            create(model="gpt-4o-mini", messages=MESSAGES, temperature=0.2)
        end = clock()
        walls.append(wall_clock() - wall)
        return end - start

    def stream(n: int) -> int:
        start = clock()
        with scope():
            for _ in create(model="gpt-4o-mini", messages=MESSAGES, stream=True, max_tokens=n,
                            stream_options={"include_usage": True}):
                pass
        return clock() - start

    for _ in range(200):
        one()
        stream(SHORT)
    walls.clear()
    cpu0 = time.process_time()
    thread = [one() for _ in range(calls)]
    flush()
    cpu = (time.process_time() - cpu0) / calls
    short = [stream(SHORT) for _ in range(streams)]
    long_ = [stream(LONG) for _ in range(streams)]
    flush()
    return {
        "mode": mode,
        "p50_us": statistics.median(thread) / 1e3,
        "wall_p50_us": statistics.median(walls[:calls]) / 1e3,
        "cpu_us": cpu * 1e6,
        "stream_short_us": statistics.median(short) / 1e3,
        "stream_long_us": statistics.median(long_) / 1e3,
        "spans": exporter.count,
        "openai": openai.__version__,
    }


# -- driver ----------------------------------------------------------------------------------------


def run_mode(python: str, mode: str, calls: int, streams: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    proc = subprocess.run(
        [python, str(Path(__file__).resolve()), "--worker", mode, "--calls", str(calls), "--streams", str(streams)],
        capture_output=True, text=True, env=env, timeout=900,
    )
    if proc.returncode != 0:
        return {"mode": mode, "error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--streams", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-python", default="/tmp/peer-venv/bin/python")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.calls, args.streams)))
        return

    here = sys.executable
    plan = [("none", here, "none"), ("verdict", here, "none")]
    peers_available = Path(args.peer_python).exists()
    if peers_available:
        plan += [("none", args.peer_python, "none@peer"), ("otel-openai-v2", args.peer_python, "none@peer"),
                 ("openinference", args.peer_python, "none@peer")]
    results: dict[str, list[dict]] = {}
    for _ in range(args.rounds):  # rounds interleave modes so drift in machine load hits all of them
        for mode, python, _base in plan:
            label = "none@peer" if (mode == "none" and python != here) else mode
            results.setdefault(label, []).append(run_mode(python, mode, args.calls, args.streams))

    def med(label: str, key: str) -> float:
        return statistics.median(r[key] for r in results[label])

    print(f"sdk_overhead: {args.calls} non-streamed calls and {args.streams} streams of {SHORT}/{LONG} chunks "
          f"per mode, {args.rounds} rounds, ~{len(SYSTEM) + len(USER)} B prompt; medians over rounds")
    print("p50 call = CPU time of the calling thread per non-streamed call; wall p50 shown for reference;")
    print("cpu/call = whole-process CPU (all threads, incl. background export) per call")
    print(f"{'mode':<16}{'p50 call µs':>12}{'added µs':>10}{'ratio':>8}{'wall p50 µs':>13}{'cpu/call µs':>13}"
          f"{'added/chunk µs':>16}{'spans':>8}")
    rows = {}
    for mode, python, base in plan:
        label = "none@peer" if (mode == "none" and python != here) else mode
        errors = [r["error"] for r in results[label] if "error" in r]
        if errors:
            print(f"{label:<16} FAILED: {errors[0]}")
            continue
        p50, base_p50 = med(label, "p50_us"), med(base, "p50_us")
        chunk = (med(label, "stream_long_us") - med(label, "stream_short_us")) / (LONG - SHORT)
        base_chunk = (med(base, "stream_long_us") - med(base, "stream_short_us")) / (LONG - SHORT)
        spans = min(r["spans"] for r in results[label])
        works = mode == "none" or spans > 0
        rows[label] = (p50 - base_p50, chunk - base_chunk, works)
        note = "" if works else "  (produced no spans: does not work with this openai)"
        print(f"{label:<16}{p50:>12.1f}{p50 - base_p50:>10.1f}{p50 / base_p50:>8.2f}{med(label, 'wall_p50_us'):>13.1f}"
              f"{med(label, 'cpu_us'):>13.1f}"
              f"{chunk - base_chunk:>16.3f}{spans:>8}{note}")
    if not peers_available:
        print(f"peers: side venv {args.peer_python} not found (see the module docstring to create it)")
    if "verdict" in rows:
        added, per_chunk, _ = rows["verdict"]
        peer_added = [v[0] for k, v in rows.items() if k not in ("none", "none@peer", "verdict") and v[2]]
        print(f"targets: verdict added p50 {added:.1f} µs (target <= 70): {'PASS' if added <= 70 else 'FAIL'}; "
              f"per chunk {per_chunk:.3f} µs (target <= 2): {'PASS' if per_chunk <= 2 else 'FAIL'}; "
              + (f"below every working peer (min {min(peer_added):.1f} µs): {'PASS' if added < min(peer_added) else 'FAIL'}"
                 if peer_added else "no working peer to compare"))


if __name__ == "__main__":
    main()
