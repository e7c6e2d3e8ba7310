"""Collector memory bound: peak RSS of the collector tree (server + decode workers) under the
requests that cost the most memory within the default limits (issue 16: <= 1 GB).

    .venv/bin/python bench/collector_memory.py                 # 20 s per workload, 24 clients
    .venv/bin/python bench/collector_memory.py --seconds 60 -- --decode-workers 2   # collector flags after --

Workloads, each sent by --clients concurrent HTTP clients (a closed loop, 429s retried after
Retry-After) to the real collector with default limits: the most minimal spans a request may hold;
the most attribute values; a body at the size limit made of a few huge strings; one made of many
short strings. Prints the peak RSS (summed and PSS) per workload and over all, against 1 GB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.collector_ingest import Load, rss_mb, start_collector  # noqa: E402
from collector.decoding import VALUES_PER_SPAN  # noqa: E402

LIMIT_MB = 1024
MAX_SPANS = 10_000  # the collector's default --max-spans-per-request
MAX_BODY = 16 * 1024 * 1024


def _request(spans: int, attributes: int, value) -> tuple[str, bytes, int]:
    """One OTLP/HTTP trace export as `Load` sends it: (path, encoded request, spans in it)."""
    request = ExportTraceServiceRequest()
    out = request.resource_spans.add().scope_spans.add().spans
    for i in range(1, spans + 1):
        span = out.add(trace_id=i.to_bytes(16, "big"), span_id=i.to_bytes(8, "big"), name="s",
                       start_time_unix_nano=1, end_time_unix_nano=2)
        for a in range(attributes):
            kv = span.attributes.add(key=f"k{a}")
            if isinstance(value, int):
                kv.value.int_value = value
            else:
                kv.value.string_value = value(i, a)
    body = request.SerializeToString()
    assert len(body) <= MAX_BODY, len(body)
    return "/v1/traces", body, spans


def workloads() -> dict[str, tuple[str, bytes, int]]:
    per_span = VALUES_PER_SPAN - 1
    return {
        f"{MAX_SPANS} minimal spans": _request(MAX_SPANS, 0, 0),
        f"{MAX_SPANS} spans x {per_span} int attributes": _request(MAX_SPANS, per_span, 7),
        "16 MiB of 262,144-char strings": _request(60, 1, lambda i, a: f"{i:08d}" * 32_768),
        f"16 MiB of short strings ({MAX_SPANS} x {per_span})":
            _request(MAX_SPANS, per_span, lambda i, a: f"{i:010d}-{a:02d}-abcdefg"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20, help="per workload")
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("collector_args", nargs="*", help="extra collector flags, after --")
    args = parser.parse_args()
    bodies = workloads()
    overall = (0.0, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        proc, endpoint = start_collector(Path(tmp) / "data", args.collector_args, token=False, transport="http")
        server = psutil.Process(proc.pid)
        try:
            for label, request in bodies.items():
                peak = [0.0, 0.0, 0.0]
                stop = threading.Event()

                def sample(peak=peak, stop=stop) -> None:
                    while not stop.wait(0.1):
                        try:
                            own, summed, pss = rss_mb(server)
                        except psutil.Error:
                            return
                        peak[:] = max(peak[0], summed), max(peak[1], pss), max(peak[2], own)

                sampler = threading.Thread(target=sample)
                sampler.start()
                load = Load(endpoint, [request], args.clients, None, token=False)
                load.run(args.seconds)
                time.sleep(1)  # memory kept after the burst counts too
                stop.set()
                sampler.join()
                overall = (max(overall[0], peak[0]), max(overall[1], peak[1]))
                print(f"[{label}] body {len(request[1]) / 2**20:.1f} MiB; {load.acked} acked, refused {load.errors}; "
                      f"peak RSS {peak[0]:.0f} MB summed ({peak[1]:.0f} MB PSS, server alone {peak[2]:.0f} MB); "
                      f"1 s after: {rss_mb(server)[1]:.0f} MB",
                      flush=True)
        finally:
            proc.terminate()
            proc.wait(120)
    print(f"peak RSS of the collector tree: {overall[0]:.0f} MB summed, {overall[1]:.0f} MB PSS "
          f"(limit {LIMIT_MB} MB: ratio {overall[0] / LIMIT_MB:.2f})")


if __name__ == "__main__":
    main()
