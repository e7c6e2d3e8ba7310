"""Run `verdict review ...` in-process through the real dispatcher; returns (exit code, stdout JSON or
None, stderr JSON or None)."""

from __future__ import annotations

import json
from typing import Any

from verdict_daemon.cli import main


def review(capsys, *argv: str) -> tuple[int, Any, Any]:
    try:
        code = main(["review", *argv])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)  # exit()'s rule
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, json.loads(err) if err.strip() else None
