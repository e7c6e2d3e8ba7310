"""The closed error vocabulary and its documentation cannot drift apart."""

import re
from pathlib import Path

from verdict_daemon.errors import ERROR_CODES

DOC = Path(__file__).resolve().parents[2] / "docs" / "daemon.md"


def test_every_error_code_is_documented_and_every_documented_code_exists():
    section = DOC.read_text().split("### Error codes", 1)[1].split("\n#", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    assert documented == set(ERROR_CODES)
