"""An S3-compatible server on loopback for tests and benches: moto's standalone server (a real HTTP server
speaking the S3 REST API with signature checks off), started as its own process on a free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class S3Server:
    proc: subprocess.Popen
    endpoint: str

    @property
    def env(self) -> dict[str, str]:
        """The standard variables a collector or `verdict sql` needs to reach this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "verdict-test",
                "AWS_SECRET_ACCESS_KEY": "verdict-test-secret", "AWS_REGION": "us-east-1",
                "AWS_EC2_METADATA_DISABLED": "true"}

    def new_bucket(self) -> str:
        """A fresh bucket (tests share one server)."""
        name = f"lake-{uuid.uuid4().hex[:16]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        urllib.request.urlopen(request, timeout=10).read()
        return name

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


def start_s3_server(timeout: float = 60.0) -> S3Server:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited with {proc.returncode}")
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).read()
            return S3Server(proc, endpoint)
        except urllib.error.HTTPError:
            return S3Server(proc, endpoint)
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("moto server did not start")
