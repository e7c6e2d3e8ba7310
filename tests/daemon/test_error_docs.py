"""The closed error vocabulary, its exit codes and its documentation cannot drift apart (docs/cli.md)."""

import re
from pathlib import Path
from typing import get_args

from verdict.cli_errors import EXIT_CODES, ErrorCode
from verdict_daemon.errors import ERROR_CODES

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_every_error_code_is_documented_with_its_exit_code_and_every_documented_code_exists():
    section = DOC.read_text().split("### Error codes", 1)[1].split("\n#", 1)[0]
    documented = dict(re.findall(r"^\| `([a-z_]+)` \| (\d+) \|", section, flags=re.MULTILINE))
    assert set(documented) == set(ERROR_CODES) == set(get_args(ErrorCode))
    assert {code: int(exit_code) for code, exit_code in documented.items()} == EXIT_CODES
