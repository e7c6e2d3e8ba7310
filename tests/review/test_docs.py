"""docs/review.md: the walkthrough runs as written, in bash with the installed `verdict`, on a data dir a
real cycle judged; what it writes is a sentinel set that loads back."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verdict.sentinel import load_sentinel_set

DOC = Path(__file__).resolve().parents[2] / "docs" / "review.md"


@pytest.mark.slow  # six `verdict` processes: ~15 s on a shared machine
def test_the_walkthrough_runs_as_written(_judged_template, tmp_path):
    (block,) = re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.DOTALL)
    shutil.copytree(_judged_template, tmp_path / "verdict-data")
    bin_dir = str(Path(sys.executable).parent)
    done = subprocess.run(["bash", "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]})
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    examples = load_sentinel_set(tmp_path / "reviewed.jsonl").examples
    assert len(examples) == 1 and examples[0].label_map == {"relevance": "PASS", "safety": "PASS"}
