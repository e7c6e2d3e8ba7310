"""`verdict collector` on a busy port (issue 30 item 2): the error names the address and the flag, and nothing
is created (no data dir), for the HTTP and the gRPC port alike. Real processes over loopback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize("flag", ["--http-port", "--grpc-port"])
def test_a_busy_port_is_named_with_its_flag_and_creates_nothing(collector_factory, tmp_path, flag):
    running = collector_factory()
    busy = running.http_port if flag == "--http-port" else running.grpc_port
    other = "--grpc-port" if flag == "--http-port" else "--http-port"
    fresh = tmp_path / "fresh" / "data"
    done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", "collector", "--data-dir", str(fresh),
                           flag, str(busy), other, "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "invalid_config"
    assert error["message"].startswith(f"cannot listen on 127.0.0.1:{busy} (Address already in use): choose another "
                                       f"port with {flag} (env VERDICT_COLLECTOR_{flag[2:].upper().replace('-', '_')})")
    assert not (tmp_path / "fresh").exists()
    assert running.process.poll() is None  # the running collector is untouched
