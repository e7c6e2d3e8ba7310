"""Every code block of docs/*.md runs as written, or says why not (issue 30, "Docs that run").

The rules and directives are README.md's (tests/readme_blocks.py). A page's shell, console, SQL and
Python blocks are run by exactly one of:

* a test of the page's own (RUN_BY), which also checks what the examples print on the data they describe;
* this module: the page's remaining code blocks, in page order, in one session against real parts (the
  real collector and CLIs from .venv/bin, a lake written with the collector's own writer, the fake OpenAI
  server the real `openai` client reaches). Python blocks run as scripts, so a page's `verdict.init()` never
  touches this process;
* nobody, when the block says why with `<!-- readme: illustration WHY -->`.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tests import readme_blocks as rb
from tests.test_readme import collector_port_env, write_acme_lake

DOCS = rb.ROOT / "docs"
CODE = ("python", "console", "sql", *rb.SHELLS)
RUN_BY = {  # page -> (its own test, the languages that test runs)
    "clustering.md": ("tests/clustering/test_docs.py", {"console", "python"}),
    "collector.md": ("tests/collector/test_sql.py", {"sql"}),
    "correlation.md": ("tests/correlate/test_docs.py", {"python"}),
    "daemon.md": ("tests/daemon/test_views.py", {"sql"}),
    "engine.md": ("tests/engine/test_docs.py", {"python"}),
    "judges.md": ("tests/judges/test_docs.py", {"python"}),
    "probes.md": ("tests/probes/test_docs.py", {"python"}),
    "review.md": ("tests/review/test_docs.py", {"bash"}),
    "scaling.md": ("tests/engines/recipes.py", {"python", "sql"}),
    "statistics.md": ("tests/stats/test_docs.py", {"python"}),
    "trust.md": ("tests/trust/test_docs.py", {"python"}),
}


def page_blocks(page: Path) -> list[rb.Block]:
    return rb.parse(page.read_text(), f"docs/{page.name}")


def run_here(page: Path) -> list[rb.Block]:
    """The page's code blocks this module runs: not an illustration, not run by the page's own test."""
    own = RUN_BY.get(page.name, ("", set()))[1]
    return [b for b in page_blocks(page)
            if b.lang in CODE and b.directive("illustration") is None and b.lang not in own]


PAGES = sorted(DOCS.glob("*.md"))
SESSION_PAGES = [p for p in PAGES if run_here(p)]


def test_every_block_is_run_or_says_why_not():
    """Each block has a language, and each block this module runs (or skips) is one the runner can handle;
    the blocks a page's own test runs are that test's business."""
    problems = []
    for page in PAGES:
        here = run_here(page)
        for block in page_blocks(page):
            if block.lang == "":
                problems.append(f"{block.where}: no language (a listing or transcript is ```text)")
            elif block in here or block.directives:
                try:
                    rb.check_runnable(block)
                except ValueError as exc:
                    problems.append(str(exc))
    assert problems == []


def test_pages_with_their_own_tests_name_them():
    for page, (test, _) in RUN_BY.items():
        assert (DOCS / page).is_file(), page
        assert page in (rb.ROOT / test).read_text(), f"{test} does not read docs/{page}"


def test_an_unmarked_block_is_run_and_a_marked_one_is_not(tmp_path):
    """The two halves of the rule, on a page written to break it: the unmarked block must fail here."""
    page = tmp_path / "page.md"
    page.write_text("<!-- readme: illustration a synopsis -->\n```sh\nverdict nothing [--flag]\n```\n\n"
                    "```sh\nexit 7\n```\n")
    (marked, unmarked) = page_blocks(page)
    session = rb.Session(tmp_path, rb.session_env({}), {})
    session.run(marked)  # not run: it would fail
    with pytest.raises(rb.BlockFailed, match="exit status 7"):
        session.run(unmarked)
    with pytest.raises(ValueError, match="takes a reason"):
        rb.check_runnable(rb.parse("<!-- readme: illustration -->\n```sh\ntrue\n```\n")[0])


def as_script(block: rb.Block) -> rb.Block:
    """A page's in-process Python block as a session script (its own interpreter)."""
    return replace(block, directives=(*block.directives, ("session", ""))) if block.in_process else block


@pytest.mark.slow  # each page: its commands and scripts as subprocesses (the tracing page: a real collector)
@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", SESSION_PAGES, ids=[p.name for p in SESSION_PAGES])
def test_page_runs_in_order(page, tmp_path, fake_openai):
    ports = rb.free_ports(rb.README_PORTS)
    env = rb.session_env({"OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": "sk-docs-test",
                          **collector_port_env(ports)})
    session = rb.Session(tmp_path, env, {"lake": write_acme_lake}, ports=ports)
    collector = rb.Block("sh", "verdict collector --data-dir ./verdict-data\n", 0,
                         (("background", f"http://127.0.0.1:{ports[4318]}/healthz"),), "the collector setup")
    session.setups["collector"] = lambda _: session.run(collector)
    try:
        for block in run_here(page):
            session.run(as_script(block))
    finally:
        session.close()
    if page.name == "tracing.md":  # the two-line example's call went through the real client, into the lake
        assert any("Why was I charged twice" in json.dumps(r.body) for r in fake_openai.requests)
        out = subprocess.run(["verdict", "sql", "SELECT count(*) AS n FROM llm_calls WHERE intent_key = 'billing.v1'",
                              "--tenant", "__verdict_local__", "--format", "json"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True)
        assert json.loads(out.stdout) == [{"n": 1}]
