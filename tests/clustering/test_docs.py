"""docs/clustering.md runs as written: its console examples, in order, print the JSON shown
(timestamps aside) on the lake the page describes, and its Python API block runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests.clustering.lakes import build
from verdict_daemon.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "clustering.md"
C = "verdict cluster --data-dir ./verdict-data --tenant acme --actor alice"
TIMES = ("created_at", "at")  # when the example ran: the only fields that differ between runs
QUIET = [">", "/dev/null"]  # a step whose output the page does not show


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", DOC.read_text(), flags=re.DOTALL | re.MULTILINE)


def _steps() -> list[tuple[list[str], str]]:
    """(argv after `verdict`, the output shown) of every `$ ` line, in page order."""
    steps = []
    for block in _blocks("console"):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, _, shown = chunk.partition("\n")
            argv = shlex.split(command.replace("$C", C))
            assert argv[:2] == ["verdict", "cluster"], command
            steps.append((argv[1:], shown))
    return steps


def _without_times(value):
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def test_console_examples_print_what_the_page_shows(tmp_path, monkeypatch, capsys):
    build(tmp_path / "verdict-data", tenants=("acme",))
    monkeypatch.chdir(tmp_path)
    steps = _steps()
    assert len(steps) >= 18
    for argv, shown in steps:
        quiet = argv[-2:] == QUIET
        code = main(argv[:-2] if quiet else argv)
        out = capsys.readouterr()
        # a result on stdout (exit 0), or the error envelope on stderr (exit 2; 3 for invalid_tenant): the page
        # shows either
        assert (code, bool(out.out), bool(out.err)) in ((0, True, False), (2, False, True), (3, False, True)), argv
        document = json.loads(out.out or out.err)
        if quiet:
            assert code == 0 and not shown.strip(), argv
        else:
            assert _without_times(document) == _without_times(json.loads(shown)), argv


def test_python_api_block_runs(tmp_path, monkeypatch, capsys):
    build(tmp_path / "verdict-data", tenants=("acme",))
    monkeypatch.chdir(tmp_path)
    (block,) = _blocks("python")
    exec(compile(block, str(DOC), "exec"), {})
    printed = capsys.readouterr().out
    assert "'assigned': 108, 'total': 108, 'clusters_used': 4" in printed
