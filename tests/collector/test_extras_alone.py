"""Extras that work alone, each installed into a fresh venv (with the repo's constraints). The `s3` extra:
the repository installed with only the extras `verdict sql --lake-url` needs (`server` for DuckDB and
Arrow, `s3` for the store) reads a lake shipped to the S3-compatible server on loopback; without fsspec it
names the extra to install instead of failing with `internal_error ModuleNotFoundError`. The app-only
`openai` extra: the SDK instruments, and the server commands name the `server` extra."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collector.loadgen import export_request, span_ids
from tests.collector.conftest import land_request
from tests.collector.s3_server import start_s3_server

pytestmark = [pytest.mark.slow, pytest.mark.objectstore]

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("verdict", "collector", "verdict_daemon", "verdict_ui", "verdict_demo")


def _fresh_venv(root: Path, extras: str) -> Path:
    """A venv holding the repository installed as a user would, with `[extras]` only. The sources are
    copied first: a build in place would leave build/ and *.egg-info in the checkout."""
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for name in PACKAGES:
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                          "-c", str(REPO / "constraints" / "test.txt"), f"{src}[{extras}]"],
                         capture_output=True, text=True, timeout=1200, env=_without_checkout())
    assert pip.returncode == 0, pip.stderr[-4000:]
    return venv


def _without_checkout() -> dict[str, str]:
    """This environment without PYTHONPATH: the fresh venv runs what it installed, not the checkout."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_verdict_sql_reads_a_shipped_lake_with_only_the_s3_and_server_extras(tmp_path, monkeypatch):
    from collector import compaction, lake
    from collector.objectstore import ObjectLake
    from collector.shipping import Shipper
    from collector.stats import Stats

    venv = _fresh_venv(tmp_path, "server,s3")
    server = start_s3_server()
    try:
        for name, value in server.env.items():  # for the shipping below
            monkeypatch.setenv(name, value)
        data_dir = tmp_path / "data"
        lake.prepare(data_dir)
        request = export_request(random.Random(5), 20, time.time_ns())
        land_request(data_dir, request)
        compaction.compact_all(data_dir, 1)
        lake_url = f"s3://{server.new_bucket()}/lake"
        assert Shipper(data_dir, ObjectLake(lake_url), 0.0, Stats()).ship_once() == 1

        def sql() -> subprocess.CompletedProcess:
            return subprocess.run(
                [str(venv / "bin" / "verdict"), "sql", "SELECT span_id FROM spans", "--lake-url", lake_url,
                 "--data-dir", str(tmp_path / "absent"), "--format", "json"],
                capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_without_checkout())

        out = sql()
        assert out.returncode == 0, out.stderr
        assert sorted(row["span_id"] for row in json.loads(out.stdout)) == sorted(span_ids(request))

        # A broken install (fsspec gone): the closed error names the extra.
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "--yes", "--quiet", "fsspec"],
                       check=True, timeout=300, env=_without_checkout())
        out = sql()
        assert out.returncode == 2, out.stderr
        error = json.loads(out.stderr)["error"]
        assert error["code"] == "invalid_config" and "verdict-monitor[s3]" in error["message"], error
    finally:
        server.stop()


APP = """
import verdict
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
verdict.init(service_name="app", exporter=InMemorySpanExporter())
verdict.instrument()
import openai
from openai.resources.chat.completions import Completions
print(type(vars(Completions)["create"]).__name__)
"""


def test_an_app_only_install_instruments_and_its_server_commands_name_the_extra(tmp_path):
    venv = _fresh_venv(tmp_path, "openai")
    app = subprocess.run([str(venv / "bin" / "python"), "-c", APP], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=_without_checkout())
    assert app.returncode == 0, app.stderr
    assert app.stdout.strip() == "FunctionWrapper", app.stdout  # patched when the app imported openai
    for argv in (["sql", "SELECT 1", "--tenant", "acme", "--data-dir", "."],
                 ["collector", "--data-dir", "lake", "--http-port", "0", "--grpc-port", "-1"],
                 ["ui", "--data-dir", ".", "--tenant", "acme"]):
        out = subprocess.run([str(venv / "bin" / "verdict"), *argv], capture_output=True, text=True, timeout=120,
                             cwd=tmp_path, env=_without_checkout())
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        error = json.loads(out.stderr.strip().splitlines()[-1])["error"]
        assert error["code"] == "missing_extra" and "verdict-monitor[server]" in error["message"], (argv, error)
