"""Every ```python block of docs/statistics.md runs as written (each in a fresh namespace)."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.DOTALL | re.MULTILINE)


def test_the_doc_has_examples_for_drift_injection_and_agreement():
    text = "\n".join(BLOCKS)
    for name in ("DriftDetector(", "CorruptionInjector(", "evaluate_agreement("):
        assert name in text


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_block_runs(index, capsys):
    exec(compile(BLOCKS[index], f"{DOC.name}[block {index}]", "exec"), {"__name__": f"doc_block_{index}"})  # noqa: S102
    assert capsys.readouterr().out.strip()  # every example prints what it shows
