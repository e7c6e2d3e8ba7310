"""Instructions per redacted text (callgrind), this checkout next to another one in one run: counts do
not move with the machine's load, so a change to the redactor is compared exactly.

    python bench/redact_instructions.py --baseline-root ../main-worktree
    python bench/redact_instructions.py --texts 300

Texts, each new to the redactor (no remembered result flatters): the ~790-character user message of
`bench/sdk_overhead.py --unique-prompts` (an e-mail, a phone and an invoice number: what the SDK's
export thread redacts per call), and the message-attribute JSON of `collector.loadgen` spans (a ticket
number and prose: what the collector re-redacts for tokenless spans). Each kind runs in its own
process under `valgrind --tool=callgrind` for N and 3N texts; the difference over 2N is one text's cost.
Needs valgrind on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # bench.sdk_overhead, when run as a script
_DRIVER = """
import json, sys
from verdict.redact import Redactor
texts, n = json.load(open(sys.argv[1])), int(sys.argv[2])  # 3N texts read in both runs: their cost cancels
redactor = Redactor()
for text in texts[:n]:
    redactor.text(text)
"""


def _texts(kind: str, n: int) -> list[str]:
    if kind == "sdk":
        from bench.sdk_overhead import USER

        return [f"{USER} (Reference {i}.)" for i in range(n)]
    from collector import loadgen

    rng, texts = random.Random(5), []  # type: tuple[random.Random, list[str]]
    while len(texts) < n:
        attributes = {kv.key: kv.value.string_value for kv in loadgen.genai_span(rng, 0).attributes}
        texts += [attributes["gen_ai.input.messages"], attributes["gen_ai.output.messages"]]
    return texts[:n]


KINDS = (("sdk", "SDK user message, ~790 characters"), ("collector", "collector message JSON, ~300 characters"))


def instructions(tmp: Path, root: Path, kind: str, n: int) -> int:
    result = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/callgrind.%p", sys.executable,
         str(tmp / "driver.py"), str(tmp / f"{kind}.json"), str(n)],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    return int(re.search(r"Collected : (\d+)", result.stderr).group(1))  # type: ignore[union-attr]  # callgrind always reports it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=500, help="N: runs of N and 3N texts are compared")
    parser.add_argument("--baseline-root", type=Path, help="another checkout (e.g. a worktree of main)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    roots = [("this", ROOT)] + ([("baseline", args.baseline_root.resolve())] if args.baseline_root else [])
    with tempfile.TemporaryDirectory(prefix="verdict-redact-instructions-") as tmp:
        (Path(tmp) / "driver.py").write_text(_DRIVER)
        for kind, label in KINDS:
            (Path(tmp) / f"{kind}.json").write_text(json.dumps(_texts(kind, 3 * args.texts)))
            per_text = {}
            for name, root in roots:
                small, large = (instructions(Path(tmp), root, kind, n) for n in (args.texts, 3 * args.texts))
                per_text[name] = (large - small) / (2 * args.texts)
            line = f"{label}: {per_text['this']:,.0f} instructions per text"
            if "baseline" in per_text:
                line += f" (baseline {per_text['baseline']:,.0f}: {per_text['this'] / per_text['baseline']:.2f}x)"
            print(line)


if __name__ == "__main__":
    main()
