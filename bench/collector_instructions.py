"""Collector CPU per span as instruction counts (callgrind): repeatable on a busy machine, where
wall-clock and even CPU-time figures drift with the other load.

    .venv/bin/python bench/collector_instructions.py            # SDK claim, tokenless, dialect spans
    .venv/bin/python bench/collector_instructions.py --spans 256
    .venv/bin/python bench/collector_instructions.py --decoder both   # compiled decoder vs the upb fallback

For each kind, a decode worker's `decode_export` runs in its own process under
`valgrind --tool=callgrind` on a request of N and of 3N spans (after a warm-up request with other
texts, so no redaction cache flatters); the difference over 2N is the cost of one span: protobuf
decoding, flattening, redaction, the Arrow column layout. Needs valgrind on PATH.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from collector import loadgen

# (label, request builder in collector.loadgen, authenticated: the SDK's redaction claim is trusted)
KINDS = (("SDK claim trusted", "export_request", True), ("tokenless", "export_request", False),
         ("dialect spans (OpenInference / OpenLLMetry), tokenless", "dialect_request", False))
ROOT = Path(__file__).resolve().parent.parent  # imported by the driver unless PYTHONPATH says otherwise
_DRIVER = """
import sys
from collector import spandata
from collector.decoding import DecodeSettings, decode_export, init_worker
warm, body, spans, authenticated = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), int(sys.argv[3]), sys.argv[4] == "1"
if sys.argv[5] == "upb":
    spandata._otlpdecode = None  # the fallback an install without a compiler runs
elif spandata._otlpdecode is None:
    raise SystemExit("collector._otlpdecode is not built (make test builds it; or python setup.py build_ext --inplace)")
init_worker(DecodeSettings(max_body_bytes=64 << 20, max_attribute_chars=65536, redact="content",
                           allow_claimed_tenant=False))
decode_export(warm, None, None, "local", authenticated)
assert decode_export(body, None, None, "local", authenticated).accepted == spans
"""


def instructions(tmp: Path, builder: str, spans: int, authenticated: bool, decoder: str) -> int:
    """Instructions of a whole driver process (start-up included: it cancels in the difference). The
    requests are built here, outside the measured process."""
    make = getattr(loadgen, builder)
    warm, body = tmp / f"{builder}-warm.bin", tmp / f"{builder}-{spans}.bin"
    warm.write_bytes(make(random.Random(99), 64, 1_600_000_000 * 10**9).SerializeToString())
    body.write_bytes(make(random.Random(7), spans, 1_700_000_000 * 10**9).SerializeToString())
    result = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/callgrind.%p", sys.executable,
         str(tmp / "driver.py"), str(warm), str(body), str(spans), "1" if authenticated else "0", decoder],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))},
    )
    return int(re.search(r"Collected : (\d+)", result.stderr).group(1))  # type: ignore[union-attr]  # callgrind always reports it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=256, help="N: requests of N and 3N spans are compared")
    parser.add_argument("--decoder", choices=("compiled", "upb", "both"), default="compiled",
                        help="protobuf traces through collector._otlpdecode, or its fallback (upb), or both")
    args = parser.parse_args()
    decoders = ("compiled", "upb") if args.decoder == "both" else (args.decoder,)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="verdict-instructions-") as tmp:
        (Path(tmp) / "driver.py").write_text(_DRIVER)
        for label, builder, authenticated in KINDS:
            for decoder in decoders:
                small, large = (instructions(Path(tmp), builder, n, authenticated, decoder)
                                for n in (args.spans, 3 * args.spans))
                print(f"{label} ({decoder}): {(large - small) / (2 * args.spans):,.0f} instructions per span",
                      flush=True)


if __name__ == "__main__":
    main()
