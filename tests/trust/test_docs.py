"""docs/trust.md: every python example runs, and what it prints matches the `# ...` lines after it."""

import contextlib
import io
import re
from pathlib import Path

from tests.judges.test_docs import expected_output

DOC = Path(__file__).resolve().parents[2] / "docs" / "trust.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


def printed_by(block: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(DOC), "exec"), {"__name__": "docs_example"})  # noqa: S102 - our own docs
    return out.getvalue().splitlines()


def test_every_python_example_prints_what_the_doc_says():
    for index, block in enumerate(BLOCKS):
        assert printed_by(block) == expected_output(block), f"example {index} of {DOC.name}"


def test_the_docs_cover_sentinels_the_gate_and_the_helper():
    text = "\n".join(BLOCKS)
    assert len(BLOCKS) == 2
    for name in ("load_sentinel_set(", "evaluate_judge_health(", "assert_pass_rate("):
        assert name in text
