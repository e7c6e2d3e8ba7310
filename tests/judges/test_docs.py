"""docs/judges.md: every python example runs, and what it prints matches the `# ...` lines after it."""

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "judges.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


def expected_output(block: str) -> list[str]:
    """Comment lines that directly follow a print(...) line (or another such comment) are its output."""
    lines, expected, after_print = block.splitlines(), [], False
    for line in lines:
        if line.startswith("print("):
            after_print = True
        elif after_print and line.startswith("# "):
            expected.append(line[2:])
        else:
            after_print = False
    return expected


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example-{i}" for i in range(len(BLOCKS))])
def test_documented_example_runs_and_prints_what_it_says(block):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(DOC), "exec"), {"__name__": "docs_example"})  # noqa: S102 - our own docs
    assert out.getvalue().splitlines() == expected_output(block)


def test_the_docs_have_examples_for_every_judge():
    text = "\n".join(BLOCKS)
    for name in ("Judge(", "JudgeEnsemble(", "PairwiseJudge(", "PairwiseJudgeEnsemble(", "rank_models(",
                 "check_bias("):
        assert name in text
