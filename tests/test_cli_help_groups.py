"""`--help` grouped (issue 30 item 2): the common options first, the rest under headings, for `verdict collector`
and the other long ones. Real `verdict` processes."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.daemon.cli import env

LAKES = "more lakes (read as one with the data dir):"
HEADINGS = {
    ("collector",): ("options:", "limits and throughput:", "redaction:", "retention and compaction:",
                     "object storage (--lake-url):"),
    ("pipeline",): ("options:", "judging (without --config, or overriding it):", "drift and clusters:", LAKES),
    ("sql",): ("options:", "limits:", LAKES),
    ("report",): ("options:", "probe runs and locking:", LAKES),
    ("probes", "run"): ("options:", "endpoints and calls:", "the data dir's probe store (what `verdict report` shows):"),
}
COMMON = {("collector",): "--data-dir", ("pipeline",): "--config", ("sql",): "--tenant", ("report",): "--out",
          ("probes", "run"): "--target-model"}
LATER = {("collector",): "--retention-days", ("pipeline",): "--judge-model", ("sql",): "--timeout-s",
         ("report",): "--lake-url", ("probes", "run"): "--concurrency"}


def help_of(command: tuple[str, ...]) -> str:
    done = subprocess.run([sys.executable, "-m", "verdict_daemon.cli", *command, "--help"], capture_output=True,
                          text=True, env=env(), timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("command", sorted(HEADINGS), ids=" ".join)
def test_help_lists_the_common_options_first_and_the_rest_under_headings(command):
    text = help_of(command)
    headings = [line for line in text.splitlines() if line in HEADINGS[command]]
    assert headings == list(HEADINGS[command]), text
    first_heading = text.index(HEADINGS[command][1])
    assert re.search(rf"^  {COMMON[command]}\b", text[:first_heading], re.M)  # a common option, before the headings
    assert re.search(rf"^  {LATER[command]}\b", text[first_heading:], re.M)  # one of the rest, under a heading


def test_every_grouped_collector_option_exists_and_the_usage_is_one_line():
    from collector.config import _OPTIONS, GROUPS

    grouped = [flag for flags in GROUPS.values() for flag in flags]
    assert len(grouped) == len(set(grouped)) and set(grouped) <= {o.flag for o in _OPTIONS}
    assert help_of(("collector",)).splitlines()[0] == (
        "usage: verdict collector [--data-dir DIR] [--http-port PORT] [--grpc-port PORT] [--tokens FILE] [OPTION ...]")
