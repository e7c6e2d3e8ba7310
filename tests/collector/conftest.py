"""The real collector process on ephemeral loopback ports, with a tmp data dir."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

_READY = re.compile(r"ready http=[\d.]+:(\d+) grpc=(?:[\d.]+:(\d+)|off)")


@dataclass
class Collector:
    data_dir: Path
    flags: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    http_port: int = 0
    grpc_port: int = 0
    log: list[str] = field(default_factory=list)

    def start(self, timeout: float = 60.0) -> Collector:
        self.log = []
        cmd = [sys.executable, "-m", "collector", "--data-dir", str(self.data_dir), "--http-port", "0",
               "--grpc-port", "0", "--decode-workers", "1", "--batch-delay-ms", "20", *self.flags]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, **self.env})
        deadline = time.monotonic() + timeout
        for line in self._stderr():
            self.log.append(line)
            m = _READY.search(line)
            if m:
                self.http_port, self.grpc_port = int(m.group(1)), int(m.group(2) or 0)
                threading.Thread(target=self._drain, daemon=True).start()
                return self
            if time.monotonic() > deadline:
                break
        raise AssertionError(f"collector did not start: {''.join(self.log)}")

    def _drain(self) -> None:
        for line in self._stderr():
            self.log.append(line)

    @property
    def process(self) -> subprocess.Popen:
        assert self.proc is not None, "not started"
        return self.proc

    def _stderr(self) -> IO[str]:
        assert self.process.stderr is not None  # piped
        return self.process.stderr

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def stats(self) -> dict:
        import json

        return json.loads(urllib.request.urlopen(f"{self.url}/stats", timeout=10).read())

    def stop(self) -> int:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(60)
        return self.proc.returncode if self.proc else 0

    def kill9(self) -> None:
        self.process.kill()
        self.process.wait(30)


def pytest_collection_modifyitems(config, items):
    """The soak runs only when asked for by marker (-m soak): it takes ten minutes."""
    if "soak" in (config.getoption("markexpr") or ""):
        return
    soak = [item for item in items if item.get_closest_marker("soak")]
    if soak:
        config.hook.pytest_deselected(items=soak)
        items[:] = [item for item in items if not item.get_closest_marker("soak")]


@pytest.fixture
def collector_factory(tmp_path):
    started: list[Collector] = []

    def make(*flags: str, data_dir: Path | None = None, env: dict | None = None) -> Collector:
        c = Collector(data_dir or tmp_path / "data", tuple(flags), env or {})
        started.append(c)
        return c.start()

    yield make
    for c in started:
        if c.proc and c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait(30)


def read_spans(data_dir: Path, where: str = "true") -> list[dict]:
    import duckdb

    files = list((data_dir / "spans").rglob("*.parquet"))
    if not files:
        return []
    con = duckdb.connect()
    cur = con.execute(
        f"SELECT * FROM read_parquet('{data_dir}/spans/*/*/*.parquet', hive_partitioning=true, "
        f"hive_types={{'tenant': VARCHAR, 'date': DATE}}) WHERE {where}"
    )
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def land_request(data_dir: Path, request, tenant: str = "__verdict_local__", signal: str = "traces") -> set[tuple]:
    """Write a request's spans (or log records) as segments exactly as the collector's writer does; returns
    their ids: (trace_id, span_id) per span, (record_id,) per log record."""
    import pyarrow as pa

    from collector import lake
    from collector.columns import record_batch
    from collector.decoding import DecodeSettings, decode_export, init_worker

    init_worker(DecodeSettings(1 << 24, 1 << 16, "off", False))
    ids: set[tuple] = set()
    key = ("trace_id", "span_id") if signal == "traces" else ("record_id",)
    for part in decode_export(request.SerializeToString(), None, None, tenant, False, signal).partitions:
        batch = record_batch(part.columns, part.table)
        lake.write_segment(data_dir, part.tenant, part.date, pa.Table.from_batches([batch]), table_name=part.table)
        ids.update(zip(*(batch.column(name).to_pylist() for name in key), strict=True))
    return ids


def replay_recordings(data_dir: Path, recordings: dict[str, list[Path]], request) -> Path:
    """A collector process on `data_dir` with one token per tenant, fed each tenant's recorded OTLP bodies in order,
    stopped cleanly: its data dir, the lake as the tenants' senders left it."""
    tokens = data_dir.parent / f"{data_dir.name}-tokens.yaml"
    tokens.write_text("".join(f'"token-{tenant}-0123456789": {tenant}\n' for tenant in recordings))
    collector = Collector(data_dir, ("--tokens", str(tokens)))
    collector.start()
    request.addfinalizer(collector.process.kill)  # a no-op once it exited
    for tenant, paths in recordings.items():
        for path in paths:
            post_recording(collector.http_port, path, f"token-{tenant}-0123456789")
    assert collector.stop() == 0
    return collector.data_dir


def post_recording(port: int, path, token: str) -> None:
    """POST one recorded OTLP request body (`traces-N.pb` or `logs-N.pb`; `.json`: OTLP/JSON) with a tenant token;
    it must be acked."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    content_type = "application/json" if path.suffix == ".json" else "application/x-protobuf"
    conn.request("POST", "/v1/logs" if path.name.startswith("logs") else "/v1/traces", body=path.read_bytes(),
                 headers={"Content-Type": content_type, "Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200, (str(path), body)
