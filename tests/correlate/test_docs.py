"""docs/correlation.md: the python example runs and prints what the doc says."""

import re
from pathlib import Path

from tests.judges.test_docs import expected_output
from tests.trust.test_docs import printed_by

DOC = Path(__file__).resolve().parents[2] / "docs" / "correlation.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_example_prints_what_the_doc_says():
    assert len(BLOCKS) == 1
    assert printed_by(BLOCKS[0]) == expected_output(BLOCKS[0])
