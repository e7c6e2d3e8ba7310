"""Collector ingest benchmark: prints figures, targets and ratios (no assertions).

    .venv/bin/python bench/collector_ingest.py               # full: 60 s sustained + 10M-span SQL
    .venv/bin/python bench/collector_ingest.py --seconds 10 --sql-rows 2000000   # quick look
    .venv/bin/python bench/collector_ingest.py --auth none   # tokenless: content is re-redacted
    .venv/bin/python bench/collector_ingest.py --mixed       # + tokenless + mixed dialects: all three figures
    .venv/bin/python bench/collector_ingest.py -- --trust-sdk-redaction never    # collector flags after --
    .venv/bin/python bench/collector_ingest.py --transport grpc --runs 3 --sql-rows 0  # OTLP/gRPC, median of 3

1. Sustained throughput: the real collector process (durability on: fsync + atomic rename
   before every ack) receives pre-encoded ~1.4 KB GenAI spans in batches of 512 from several
   concurrent HTTP (or, with --transport grpc, gRPC) clients for --seconds. By default the clients authenticate with a token and
   the spans carry the SDK's redaction claim, as a deployment with the Verdict SDK does.
2. Latency: the same at half the target rate; p50/p99 acknowledgement latency.
3. Collector RSS (server process plus its decode workers, also as PSS), sampled throughout.
4. CPU per span of the server, the decode workers and this load generator: on a shared
   machine the robust figure; the target needs <= cores * 1e6 / 25,000 us per span in all.
5. `verdict sql` "calls per intent per day" over --sql-rows spans written directly as Parquet.
With --mixed, two more sustained runs follow the first: tokenless (every value re-redacted) and
mixed dialects (tokenless OpenInference / OpenLLMetry spans, half the requests GenAI log records
to /v1/logs), and the three throughputs are printed side by side (spans and log records per s).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.client
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
import psutil

from collector.loadgen import dialect_request, export_request, log_events_request

BASELINE_SPANS_PER_S = 1_150  # the earlier product's import rate
TARGET_SPANS_PER_S = 25_000
TARGET_TOKENLESS_PER_S = 20_000  # every content value re-redacted (issue 14)
TARGET_P99_MS = 300
TARGET_RSS_MB = 500
TARGET_SQL_S = 2.0
BATCH = 512


BENCH_TOKEN = "bench-token-0123456789abcdef"
CORES = os.cpu_count() or 1
# CPU the whole machine may spend per span (collector and load generator) to reach the target.
CPU_BUDGET_US = CORES * 1e6 / TARGET_SPANS_PER_S


# The gRPC method each OTLP/HTTP path corresponds to (requests are sent as raw bytes).
GRPC_METHODS = {"/v1/traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                "/v1/logs": "/opentelemetry.proto.collector.logs.v1.LogsService/Export"}


@dataclasses.dataclass(frozen=True)
class Endpoint:
    transport: str  # "http" or "grpc"
    port: int


def start_collector(data_dir: Path, extra: list[str], token: bool, transport: str) -> tuple[subprocess.Popen, Endpoint]:
    auth: list[str] = []
    if token:  # a real deployment: exporters authenticate (required off loopback)
        data_dir.mkdir(parents=True)
        tokens = data_dir.parent / "tokens.yaml"
        tokens.write_text(f'"{BENCH_TOKEN}": bench\n')
        auth = ["--tokens", str(tokens)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "collector", "--data-dir", str(data_dir), "--http-port", "0",
         "--grpc-port", "0" if transport == "grpc" else "-1", *auth, *extra],
        stderr=subprocess.PIPE, text=True,
    )
    stderr = proc.stderr
    assert stderr is not None  # piped
    for line in stderr:
        m = re.search(r"ready http=[\d.]+:(\d+) grpc=(?:[\d.]+:(\d+)|off)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()
            return proc, Endpoint(transport, int(m.group(2) if transport == "grpc" else m.group(1)))
    raise SystemExit(f"collector did not start (exit {proc.wait()})")


def rss_mb(proc: psutil.Process) -> tuple[float, float, float]:
    """(server RSS, RSS summed over server + decode workers, PSS summed: shared pages counted once)."""
    procs = [proc, *proc.children(recursive=True)]
    infos = [p.memory_full_info() for p in procs]
    return infos[0].rss / 2**20, sum(i.rss for i in infos) / 2**20, sum(i.pss for i in infos) / 2**20


class Load:
    """`clients` threads sending pre-encoded requests (HTTP POSTs or gRPC calls); optional global pacing
    (requests/s). A failed request (refused, timed out, connection lost) is counted and the client goes on."""

    def __init__(self, endpoint: Endpoint, bodies: list[tuple[str, bytes, int]], clients: int,
                 rate_rps: float | None, token: bool):
        """`bodies`: (path, encoded request, spans or log records in it)."""
        self.endpoint, self.bodies, self.clients, self.rate = endpoint, bodies, clients, rate_rps
        self.headers = {"Content-Type": "application/x-protobuf"}
        if token:
            self.headers["Authorization"] = f"Bearer {BENCH_TOKEN}"
        self.latencies: list[float] = []
        self.acked = 0
        self.items = 0
        self.errors: dict[int | str, int] = {}
        self._lock = threading.Lock()
        self._next_slot = time.monotonic()

    def _slot(self) -> None:
        if self.rate is None:
            return
        with self._lock:
            slot = self._next_slot = max(self._next_slot + 1 / self.rate, time.monotonic() - 0.5)
        delay = slot - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def _client(self, seed: int, until: float) -> None:
        rng = random.Random(seed)
        connect = self._grpc_sender if self.endpoint.transport == "grpc" else self._http_sender
        send = connect()
        while time.monotonic() < until:
            self._slot()
            path, body, items = rng.choice(self.bodies)
            started = time.perf_counter()
            try:
                failure, retry_after_s = send(path, body)
            except (OSError, http.client.HTTPException) as exc:  # e.g. no ack within 60 s: count, reconnect, go on
                failure, retry_after_s = type(exc).__name__, 0.2
                send = connect()
            elapsed = time.perf_counter() - started
            with self._lock:
                if failure is None:
                    self.acked += 1
                    self.items += items
                    self.latencies.append(elapsed)
                else:
                    self.errors[failure] = self.errors.get(failure, 0) + 1
            if failure is not None:
                time.sleep(retry_after_s)

    def _http_sender(self):
        """-> send(path, body) -> (None, 0) when acknowledged, else (HTTP status, seconds to wait)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.endpoint.port, timeout=60)

        def send(path: str, body: bytes) -> tuple[int | None, float]:
            conn.request("POST", path, body=body, headers=self.headers)
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                return None, 0
            return response.status, float(response.getheader("Retry-After", "0.2"))

        return send

    def _grpc_sender(self):
        """Like _http_sender over one gRPC channel per client; failures are status code names."""
        channel = grpc.insecure_channel(f"127.0.0.1:{self.endpoint.port}", options=[("grpc.use_local_subchannel_pool", 1)])
        methods: dict[str, grpc.UnaryUnaryMultiCallable[bytes, bytes]] = {
            path: channel.unary_unary(method) for path, method in GRPC_METHODS.items()}
        metadata = (("authorization", self.headers["Authorization"]),) if "Authorization" in self.headers else None

        def send(path: str, body: bytes) -> tuple[str | None, float]:
            try:
                methods[path](body, timeout=60, metadata=metadata)
            except grpc.RpcError as exc:
                return exc.code().name, 0.2
            return None, 0

        return send

    def run(self, seconds: float) -> float:
        until = time.monotonic() + seconds
        threads = [threading.Thread(target=self._client, args=(i, until)) for i in range(self.clients)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.monotonic() - started


def cpu_seconds(proc: psutil.Process) -> tuple[float, float]:
    """User + system CPU of (the server process, its decode workers): robust to a busy machine."""
    workers = 0.0
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a worker may exit meanwhile
            workers += sum(child.cpu_times()[:2])
    return sum(proc.cpu_times()[:2]), workers


def own_cpu_seconds() -> float:
    """CPU of this process: the load generator shares the machine with the collector."""
    return sum(psutil.Process().cpu_times()[:2])


def sample_rss(proc: psutil.Process, stop: threading.Event, out: list) -> None:
    while not stop.wait(0.5):
        try:
            out.append(rss_mb(proc))
        except psutil.Error:
            return


def lake_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.rglob("*.parquet"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def ingest_phase(args, bodies: list[tuple[str, bytes, int]], seconds: float, rate_rps: float | None, label: str,
                 token: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="verdict-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        proc, endpoint = start_collector(data_dir, args.collector_args, token, args.transport)
        ps = psutil.Process(proc.pid)
        samples: list = []
        stop = threading.Event()
        threading.Thread(target=sample_rss, args=(ps, stop, samples), daemon=True).start()
        try:
            Load(endpoint, bodies[:4], 2, None, token).run(2.0)  # warm-up, not counted
            load = Load(endpoint, bodies, args.clients, rate_rps, token)
            (server_before, workers_before), loadgen_before = cpu_seconds(ps), own_cpu_seconds()
            elapsed = load.run(seconds)
            server_cpu, workers_cpu = (after - before for after, before in
                                       zip(cpu_seconds(ps), (server_before, workers_before), strict=True))
            loadgen_cpu = own_cpu_seconds() - loadgen_before
        finally:
            stop.set()
            proc.terminate()
            proc.wait(60)
        spans = load.items
        size = lake_bytes(data_dir)
        written = sum(1 for _ in data_dir.rglob("*.parquet"))
    lat_ms = [x * 1000 for x in load.latencies]
    return {
        "label": label,
        "spans_per_s": spans / elapsed,
        "acked_requests": load.acked,
        "errors": load.errors,
        "p50_ms": percentile(lat_ms, 0.50),
        "p99_ms": percentile(lat_ms, 0.99),
        "rss_main_max_mb": max((s[0] for s in samples), default=float("nan")),
        "rss_total_max_mb": max((s[1] for s in samples), default=float("nan")),
        "pss_total_max_mb": max((s[2] for s in samples), default=float("nan")),
        "bytes_per_span": size / max(1, spans + 4 * BATCH),
        "segments": written,
        "cpu_us_per_span": (server_cpu + workers_cpu) / max(1, spans) * 1e6,
        "server_us_per_span": server_cpu / max(1, spans) * 1e6,
        "workers_us_per_span": workers_cpu / max(1, spans) * 1e6,
        "loadgen_us_per_span": loadgen_cpu / max(1, spans) * 1e6,
        "load_avg": os.getloadavg()[0],
    }


_SQL_ROW = """
  SELECT printf('%032x', {offset} + i) AS trace_id, printf('%016x', {offset} + i + 1) AS span_id,
         'chat ' || (['gpt-4o-mini','gpt-4.1','claude-sonnet-4'])[1 + i % 3] AS name, 'CLIENT' AS kind,
         (TIMESTAMP '{date}' + to_microseconds(i * {step_us}))::TIMESTAMP_NS AS start_time,
         (TIMESTAMP '{date}' + to_microseconds(i * {step_us} + 900000))::TIMESTAMP_NS AS end_time,
         (900000000 + i % 1000 * 1000000)::BIGINT AS duration_ns,
         CASE WHEN i % 50 = 0 THEN 'ERROR' ELSE 'UNSET' END AS status_code, 'support-bot' AS service_name,
         '{{"gen_ai.operation.name": "chat", "server.address": "api.example.com"}}' AS attributes,
         'chat' AS operation, (['openai','openai','anthropic'])[1 + i % 3] AS provider,
         (['gpt-4o-mini','gpt-4.1','claude-sonnet-4'])[1 + i % 3] AS request_model,
         (50 + i % 4000)::BIGINT AS input_tokens, (20 + i % 800)::BIGINT AS output_tokens,
         (['billing.refund','billing.invoice','support.password','sales.quote','search.docs'])[1 + (i * 7919) % 5]
             AS intent_key,
         'production' AS workload, CASE WHEN i % 50 = 0 THEN 'timeout' END AS error_type,
         (TIMESTAMP '{date}' + to_microseconds(i * {step_us} + 1000000))::TIMESTAMP_NS AS received_at
  FROM range({n}) t(i)"""


# --two-dialects: half the calls written by a second instrumentation, each with its user message, so that
# llm_calls' identity rule runs over every call (none of them has a twin: its whole cost, no saving). With
# same_question every call asks the same question (one prompt sent all day): every call shares its key.
_TWO_DIALECTS = """
  SELECT *, (['verdict', 'openllmetry'])[1 + (hash(span_id) % 2)::BIGINT] AS dialect,
         (['verdict.tracing', 'opentelemetry.instrumentation.openai.v1'])[1 + (hash(span_id) % 2)::BIGINT] AS scope_name,
         '[{{"role": "user", "parts": [{{"type": "text", "content": "question ' || {question} || '"}}]}}]' AS input_messages
  FROM ({select})"""


# Every call described twice, as two instrumentations in one process do: the same trace, call, response id and
# messages (question and answer), two span ids (the twin's first hex digit is `e`), two dialects and scopes.
_TWINNED = """
  SELECT s.* REPLACE (CASE WHEN twin = 1 THEN 'e' || substr(s.span_id, 2) ELSE s.span_id END AS span_id),
         (['verdict', 'openllmetry'])[1 + twin] AS dialect,
         (['verdict.tracing', 'opentelemetry.instrumentation.openai.v1'])[1 + twin] AS scope_name,
         'chatcmpl-' || s.span_id AS response_id,
         '[{{"role": "user", "parts": [{{"type": "text", "content": "question ' || s.span_id || '"}}]}}]'
             AS input_messages,
         '[{{"role": "assistant", "parts": [{{"type": "text", "content": "answer ' || s.span_id || '"}}]}}]'
             AS output_messages
  FROM ({select}) s, (VALUES (0), (1)) v(twin)"""


# call_s: every call lasts that long (0.9 s otherwise). Calls start 86400 / (rows / 30) s apart, each model's
# three times that: longer calls overlap those of other models, then those of their own model too (e.g. 1M rows:
# 2.6 s apart; --call-s 5 overlaps across models only, --call-s 30 within each model, all day).
_CALL_S = """
  SELECT * REPLACE (start_time + to_microseconds({call_us}) AS end_time, {call_us}::BIGINT * 1000 AS duration_ns)
  FROM ({select})"""


def build_sql_lake(data_dir: Path, rows: int, tenant: str = "bench", two_dialects: bool = False,
                   call_s: float | None = None, same_question: bool = False, stored_fingerprints: bool = True,
                   twinned: bool = False) -> int:
    """Steady state: 30 days compacted, plus fresh segments of the last hour that include retries. Returns the
    rows stored. The compacted days hold the input fingerprint compaction stores (collector.call_input) unless
    `stored_fingerprints` is false (segments compacted before it was stored). `twinned`: every call is two spans
    (`_TWINNED`), so the lake holds half as many calls."""
    import duckdb

    from collector import call_input

    days, fresh_segments, fresh_rows = 30, 20, 5_000
    per_day = (rows - fresh_segments * fresh_rows) // days
    twins = 2 if twinned else 1
    calls_per_day, fresh_calls, resent = per_day // twins, fresh_rows // twins, 1_000 // twins
    con = duckdb.connect()

    def rows_of(**fields) -> str:
        select = _SQL_ROW.format(**fields)
        select = select if call_s is None else _CALL_S.format(select=select, call_us=round(call_s * 1e6))
        question = "'the same'" if same_question else "span_id"
        if twinned:
            return _TWINNED.format(select=select)
        return _TWO_DIALECTS.format(select=select, question=question) if two_dialects else select

    for d in range(days):
        date = f"2026-10-{d + 1:02d}"
        part = data_dir / "spans" / f"tenant={tenant}" / f"date={date}"
        part.mkdir(parents=True)
        select = rows_of(offset=d * per_day, date=date, step_us=86_400_000_000 // calls_per_day, n=calls_per_day)
        if stored_fingerprints and (two_dialects or twinned):  # the one-instrumentation lake has no messages
            select = f"SELECT *, {call_input.STORED} FROM ({select})"
        con.execute(f"COPY ({select} ORDER BY start_time) TO '{part}/c-0-bench.parquet' "
                    "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)")
    # Fresh segments of the last day: new spans, and every fourth segment re-sends 1,000 old ones.
    for k in range(fresh_segments):
        date = f"2026-10-{days:02d}"
        offset = (days - 1) * per_day + (calls_per_day - resent if k % 4 == 0 else per_day + k * fresh_calls)
        select = rows_of(offset=offset, date=date, step_us=1, n=fresh_calls)
        part = data_dir / "spans" / f"tenant={tenant}" / f"date={date}"
        con.execute(f"COPY ({select}) TO '{part}/{k + 1}-fresh.parquet' (FORMAT parquet, COMPRESSION zstd)")
    return (calls_per_day * days + fresh_segments * fresh_calls) * twins


SQL_QUERY = ("SELECT intent_key, date_trunc('day', start_time) AS day, count(*) AS calls "
             "FROM llm_calls GROUP BY ALL ORDER BY day, intent_key")


def sql_phase(rows: int) -> dict:
    import duckdb

    with tempfile.TemporaryDirectory(prefix="verdict-bench-sql-") as tmp:
        data_dir = Path(tmp)
        tenant = "bench"
        con = duckdb.connect()
        started = time.perf_counter()
        stored = build_sql_lake(data_dir, rows, tenant)
        generated_s = time.perf_counter() - started
        unique = con.execute(
            f"SELECT count(DISTINCT span_id) FROM read_parquet('{data_dir}/spans/*/*/*.parquet')").fetchall()[0][0]
        query = SQL_QUERY
        timings = []
        for _ in range(3):
            started = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-m", "verdict_daemon.cli", "sql", query, "--data-dir", str(data_dir),
                 "--tenant", tenant, "--format", "csv"],
                capture_output=True, text=True,
            )
            timings.append(time.perf_counter() - started)
            if out.returncode != 0:
                raise SystemExit(f"verdict sql failed: {out.stderr}")
        calls = sum(int(line.rsplit(",", 1)[1]) for line in out.stdout.strip().splitlines()[1:])
        from collector.sql import execute

        in_process = []
        for _ in range(3):
            started = time.perf_counter()
            execute(data_dir, tenant, query)
            in_process.append(time.perf_counter() - started)
        size = sum(p.stat().st_size for p in data_dir.rglob("*.parquet"))
    return {"rows": stored, "unique": unique, "calls": calls, "median_s": statistics.median(timings),
            "in_process_s": statistics.median(in_process),
            "generate_s": generated_s, "bytes_per_row": size / stored}


def mixed_phases(args, bodies: list, first: dict) -> None:
    """Tokenless SDK spans, then other dialects' spans plus GenAI log records; the three figures side by side."""
    rng = random.Random(11)
    now = time.time_ns()
    mixed = []
    for i in range(args.distinct_requests):
        if i % 2:
            mixed.append(("/v1/logs", log_events_request(rng, BATCH // 2, now + i * 10**9).SerializeToString(), BATCH))
        else:
            mixed.append(("/v1/traces", dialect_request(rng, BATCH, now + i * 10**9).SerializeToString(), BATCH))
    tokenless = ingest_phase(args, bodies, args.seconds, None, "tokenless", False)
    dialects = ingest_phase(args, mixed, args.seconds, None, "mixed dialects + log records", False)
    sdk_label = "SDK claim trusted" if args.auth == "token" else "tokenless (first run)"
    for r in (tokenless, dialects):
        print(f"[{r['label']}] {r['spans_per_s']:,.0f} items/s; ack p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms; "
              f"collector CPU {r['cpu_us_per_span']:.1f} us/item (server {r['server_us_per_span']:.1f} + decode "
              f"workers {r['workers_us_per_span']:.1f}); refused {r['errors'] or 'none'}; load {r['load_avg']:.1f}")
    print(f"three figures, spans (or log records) per s: {sdk_label} {first['spans_per_s']:,.0f} (target "
          f"{TARGET_SPANS_PER_S:,}); tokenless {tokenless['spans_per_s']:,.0f} (target {TARGET_TOKENLESS_PER_S:,}); "
          f"mixed dialects {dialects['spans_per_s']:,.0f}")
    # The load generator shares the cores: what the collector alone would sustain is the other honest figure.
    print(f"collector-only CPU capacity (all {CORES} cores / collector CPU per item, load generator excluded), "
          f"per s: {sdk_label} {collector_capacity(first):,.0f} (target {TARGET_SPANS_PER_S:,}); tokenless "
          f"{collector_capacity(tokenless):,.0f} (target {TARGET_TOKENLESS_PER_S:,}); mixed dialects "
          f"{collector_capacity(dialects):,.0f}")


def collector_capacity(run: dict) -> float:
    """Items per second the collector's measured CPU per item allows on all cores of this machine."""
    return CORES * 1e6 / float(run["cpu_us_per_span"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="sustained phase length")
    parser.add_argument("--clients", type=int, default=24,
                        help="concurrent HTTP clients; each waits for its ack (closed loop), so clients x 512 spans / ack "
                        "latency bounds the offered load (12 clients x 512 / ~0.2 s: ~30,000 spans/s, just above the target)")
    parser.add_argument("--distinct-requests", type=int, default=64, help="pre-encoded request bodies")
    parser.add_argument("--sql-rows", type=int, default=10_000_000, help="spans for the SQL phase (0: skip)")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--auth", choices=("token", "none"), default="token",
                        help="token: clients send a bearer token, so the spans' SDK-redaction claim is trusted "
                        "(see --trust-sdk-redaction); none: tokenless loopback, content is re-redacted")
    parser.add_argument("--mixed", action="store_true",
                        help="also run tokenless and mixed-dialect sustained phases and print the three throughputs")
    parser.add_argument("--transport", choices=("http", "grpc"), default="http",
                        help="OTLP/HTTP POSTs or OTLP/gRPC Export calls (same pre-encoded requests)")
    parser.add_argument("--runs", type=int, default=1,
                        help="sustained phase repeated this many times; the median run is reported")
    parser.add_argument("collector_args", nargs="*", help="extra collector flags, after --")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")

    print(f"machine: {CORES} cores, load average {os.getloadavg()[0]:.1f} at start; baseline (earlier product) {BASELINE_SPANS_PER_S:,} spans/s")
    if not args.skip_ingest:
        rng = random.Random(7)
        now = time.time_ns()
        bodies = [("/v1/traces", export_request(rng, BATCH, now + i * 10**9).SerializeToString(), BATCH)
                  for i in range(args.distinct_requests)]
        print(f"span size: {sum(len(b) for _, b, _ in bodies) / (BATCH * len(bodies)):.0f} B encoded; batch {BATCH}; "
              f"{args.clients} {args.transport} clients")
        token = args.auth == "token"
        runs = sorted((ingest_phase(args, bodies, args.seconds, None, "sustained", token) for _ in range(args.runs)),
                      key=lambda r: r["spans_per_s"])
        full = runs[len(runs) // 2]
        if len(runs) > 1:
            figures = ", ".join(f"{r['spans_per_s']:,.0f}" for r in runs)
            print(f"sustained runs ({args.transport}): {figures} spans/s; median {full['spans_per_s']:,.0f}")
        half_rate = TARGET_SPANS_PER_S / 2 / BATCH
        half = ingest_phase(args, bodies, max(10.0, args.seconds / 2), half_rate, "half-target rate", token)
        for r in (full, half):
            print(f"[{r['label']}] {r['spans_per_s']:,.0f} spans/s; ack p50 {r['p50_ms']:.0f} ms, "
                  f"p99 {r['p99_ms']:.0f} ms; RSS server {r['rss_main_max_mb']:.0f} MB, with decode workers "
                  f"{r['rss_total_max_mb']:.0f} MB (PSS {r['pss_total_max_mb']:.0f} MB); "
                  f"{r['bytes_per_span']:.0f} B on disk/span; {r['segments']} segments; refused "
                  f"{r['errors'] or 'none'}; collector CPU {r['cpu_us_per_span']:.1f} us/span (server "
                  f"{r['server_us_per_span']:.1f} + decode workers {r['workers_us_per_span']:.1f}), load generator "
                  f"{r['loadgen_us_per_span']:.1f} us/span; machine load average {r['load_avg']:.1f}")
        print(f"throughput: {full['spans_per_s']:,.0f} spans/s over {args.seconds:g} s "
              f"(target {TARGET_SPANS_PER_S:,}: ratio {full['spans_per_s'] / TARGET_SPANS_PER_S:.2f}; "
              f"{full['spans_per_s'] / BASELINE_SPANS_PER_S:.1f}x the baseline)")
        cpu = full["cpu_us_per_span"]
        print(f"collector CPU per span: {cpu:.1f} us; the target needs <= {CPU_BUDGET_US:.0f} us per span on "
              f"{CORES} cores for collector + clients (ratio {cpu / CPU_BUDGET_US:.2f}; with this load generator's "
              f"{full['loadgen_us_per_span']:.1f} us: {(cpu + full['loadgen_us_per_span']) / CPU_BUDGET_US:.2f})")
        capacity = collector_capacity(full)
        print(f"CPU-bound capacity if the collector had all {CORES} cores: {capacity:,.0f} spans/s "
              f"(target ratio {capacity / TARGET_SPANS_PER_S:.2f})")
        print(f"p99 ack latency at {TARGET_SPANS_PER_S // 2:,} spans/s: {half['p99_ms']:.0f} ms "
              f"(target {TARGET_P99_MS}: ratio {half['p99_ms'] / TARGET_P99_MS:.2f}; achieved rate "
              f"{half['spans_per_s']:,.0f} spans/s)")
        rss = max(full["rss_total_max_mb"], half["rss_total_max_mb"])
        pss = max(full["pss_total_max_mb"], half["pss_total_max_mb"])
        print(f"max RSS incl. decode workers: {rss:.0f} MB summed, {pss:.0f} MB PSS "
              f"(target {TARGET_RSS_MB}: ratio {rss / TARGET_RSS_MB:.2f})")
        if args.mixed:
            mixed_phases(args, bodies, full)
    if args.sql_rows:
        sql = sql_phase(args.sql_rows)
        print(f"verdict sql 'calls per intent per day' over {sql['rows']:,} stored spans "
              f"({sql['unique']:,} unique; the query counted {sql['calls']:,}): median {sql['median_s']:.2f} s "
              f"of 3 CLI runs incl. process start (target {TARGET_SQL_S} s: ratio {sql['median_s'] / TARGET_SQL_S:.2f}); "
              f"views + query alone {sql['in_process_s']:.2f} s; "
              f"generated in {sql['generate_s']:.0f} s, {sql['bytes_per_row']:.0f} B/row on disk")


if __name__ == "__main__":
    main()
