"""Re-record tests/fixtures/dialects/ from the real peer instrumentation packages.

    make peers-record                       # every sender (builds the side venvs first)
    .venv/bin/python tests/peers/record.py openinference-openai vercel-ai

Each sender (tests/peers/harness.py) runs its real package in its side venv against the fake
OpenAI/Anthropic servers and exports OTLP/HTTP to a capturing server here, which keeps every
request body as sent (gzip undone): `<sender>/traces-N.pb`, `<sender>/logs-N.pb` (`.json` for an
OTLP/JSON body), plus a
`manifest.json` with the package versions, the calls made, the planted secrets and what each
call should become in `llm_calls`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.peers.harness import (  # noqa: E402
    FIXTURES,
    SENDERS,
    _peer,
    expected_llm_calls,
    fake_providers,
    run_sender,
)


class Capture(ThreadingHTTPServer):
    """OTLP/HTTP receiver that answers 200 (an empty Export*ServiceResponse) and keeps the bodies: (signal, file
    suffix by content type, body)."""

    daemon_threads = True

    def __init__(self) -> None:
        self.bodies: list[tuple[str, str, bytes]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def take(self) -> list[tuple[str, str, bytes]]:
        with self.lock:
            taken, self.bodies = self.bodies, []
        return taken


class _Handler(BaseHTTPRequestHandler):
    server: Capture

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() != "chunked":  # Node's exporter streams chunks
            return self.rfile.read(int(self.headers.get("content-length", 0)))
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
            pass
        return b"".join(chunks)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self._body()
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        signal = self.path.rstrip("/").rsplit("/", 1)[-1]
        status = 200 if signal in ("traces", "logs") else 404
        json_body = self.headers.get("content-type", "").startswith("application/json")
        if status == 200:
            with self.server.lock:
                self.server.bodies.append((signal, "json" if json_body else "pb", body))
        answer = b"{}" if json_body else b""  # an empty Export*ServiceResponse in the request's encoding
        self.send_response(status)
        self.send_header("content-type", "application/json" if json_body else "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


def record(names: list[str]) -> int:
    chosen = [s for s in SENDERS if not names or s.name in names]
    unknown = set(names) - {s.name for s in SENDERS}
    if unknown:
        print(f"unknown sender(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    failed = 0
    with Capture() as capture, fake_providers() as (openai_server, anthropic_server):
        threading.Thread(target=capture.serve_forever, daemon=True).start()
        for sender in chosen:
            try:
                run = run_sender(sender, capture.url, openai_server, anthropic_server)
            except Exception as exc:  # report every sender, then fail
                failed += 1
                print(f"FAILED {sender.name}: {exc}", file=sys.stderr)
                capture.take()
                continue
            out = FIXTURES / sender.name
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            files: dict[str, list[str]] = {"traces": [], "logs": []}
            arrival = []
            for signal, suffix, body in capture.take():
                name = f"{signal}-{len(files[signal]) + 1}.{suffix}"
                (out / name).write_bytes(body)
                files[signal].append(name)
                arrival.append(name)
            manifest = {
                "sender": sender.name,
                "family": sender.family,
                "note": sender.note,
                "packages": run.packages,
                "env": sender.env,
                "calls": run.calls,
                "provider_requests": run.provider_requests,
                "system_instructions": _peer.SYSTEM,
                "expected_llm_calls": expected_llm_calls(sender),
                "planted_secrets": list(_peer.SECRETS),
                "files": files,
                "arrival_order": arrival,  # as the exporters sent them (log records may come first)
                "recorded_by": "tests/peers/record.py",
            }
            (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
            size = sum((out / f).stat().st_size for names_ in files.values() for f in names_)
            print(f"{sender.name}: {len(files['traces'])} traces + {len(files['logs'])} logs requests, "
                  f"{size} bytes; {run.packages}")
        capture.shutdown()
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("senders", nargs="*", help=f"default all: {', '.join(s.name for s in SENDERS)}")
    sys.exit(record(parser.parse_args().senders))


if __name__ == "__main__":
    main()
