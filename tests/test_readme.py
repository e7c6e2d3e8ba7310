"""Every code block of README.md runs as written (rules: tests/readme_blocks.py).

Python blocks run in-process, each in a fresh namespace. The session blocks (shell, console, SQL,
config files, session Python) run in README order in one temporary directory against real parts:
the real verdict-collector and CLIs from .venv/bin, a span lake written with the collector's own
writer, and the local fake OpenAI server (tests/fakes) reached by the real `openai` client.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import readme_blocks as rb
from tests.daemon.lakes import grade, synthetic_days, write_rows
from tests.fakes import Reply

BLOCKS = rb.parse(rb.README.read_text())
IN_PROCESS = [b for b in BLOCKS if b.in_process]
COVERED = [b for b in BLOCKS if b.directive("covered-by") is not None]
SESSION = [b for b in BLOCKS if b.is_code and not b.in_process and b not in COVERED]
README_TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"  # the trace the README's "one trace" query reads


def write_acme_lake(workdir: Path) -> None:
    """Nine days of two intents for tenant acme; search.v1's last-day answers are truncated."""
    rows = synthetic_days(datetime.now(UTC), intents=("billing.v1", "search.v1"), per_day=32, corrupt="search.v1")
    rows[0].update(trace_id=README_TRACE_ID, span_id=README_TRACE_ID[:16])
    write_rows(workdir / "verdict-data", "acme", rows)


def llm_reply(request) -> Reply | None:
    """The fake server's answer: a rubric judge's verdicts for judge prompts, the default reply else."""
    messages = request.body.get("messages") or []
    if messages and "with exactly the keys" in str(messages[0].get("content")):
        prompt = SimpleNamespace(messages=[SimpleNamespace(content=m["content"]) for m in messages])
        return Reply(grade(prompt))  # type: ignore[arg-type]  # grade reads only .messages[i].content
    return None


def collector_port_env(ports: dict[int, int]) -> dict[str, str]:
    """The collector's port variables for commands that rely on its default ports (4318 HTTP, 4317 gRPC)."""
    return {"VERDICT_COLLECTOR_HTTP_PORT": str(ports[4318]), "VERDICT_COLLECTOR_GRPC_PORT": str(ports[4317])}


def test_every_block_is_runnable_or_declared_not_code():
    for block in BLOCKS:
        rb.check_runnable(block)
    assert all(b.lang == "text" for b in BLOCKS if not b.is_code)


def test_the_readme_has_examples():
    assert len(IN_PROCESS) >= 10
    kinds = {b.lang for b in SESSION}
    assert {"sh", "console", "sql", "python"} <= kinds, kinds


@pytest.mark.parametrize("block", IN_PROCESS, ids=[f"line{b.line}" for b in IN_PROCESS])
def test_python_block_runs(block):
    rb.run_in_process(block)


@pytest.mark.parametrize("block", COVERED, ids=[f"line{b.line}" for b in COVERED])
def test_commands_run_elsewhere_are_run_there(tmp_path, block):
    rb.Session(tmp_path, rb.session_env({}), {}).run(block)


@pytest.mark.slow  # ~30 s of CPU: real collector and daemon, CLIs, ~600 judge calls through the openai client
@pytest.mark.timeout(900)  # wall time depends on the machine's load; each command has its own limit
def test_session_blocks_run_in_order(tmp_path, fake_openai):
    fake_openai.handler = llm_reply
    ports = rb.free_ports(rb.README_PORTS)
    env = rb.session_env({"OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": "sk-readme-test",
                          **collector_port_env(ports)})
    session = rb.Session(tmp_path, env, {"lake": write_acme_lake}, ports=ports)
    try:
        for block in SESSION:
            session.run(block)
    finally:
        session.close()
    # The quickstart's call went through the real client to the fake server and into the lake.
    assert any(r.path == "/v1/chat/completions" and "Why was I charged twice" in json.dumps(r.body)
               for r in fake_openai.requests)


@pytest.mark.parametrize("page", ["README.md", "docs/scaling.md", "docs/security.md"])
def test_links_resolve(page):
    assert rb.broken_links(rb.ROOT / page) == []


def test_docs_repeat_only_tested_readme_blocks():
    """docs/scaling.md shows the lake query and the state backup as text; they are the README's tested blocks."""
    scaling = {b.code for b in rb.parse((rb.ROOT / "docs/scaling.md").read_text())}
    tested = [b.code for b in SESSION if b.directive("duckdb") is not None or "COPY FROM DATABASE" in b.code]
    assert len(tested) == 2 and all(code in scaling for code in tested)


def test_the_session_uses_free_ports_while_the_text_keeps_the_defaults():
    """Nothing the session runs talks to a README port (something else may listen there): every block,
    after substitution, names only the free ports; the collector's defaults come from its env vars."""
    from collector.config import build_parser

    ports = rb.free_ports(rb.README_PORTS)
    assert len(set(ports.values())) == len(ports) and not set(ports.values()) & set(ports)
    text = rb.README.read_text()
    assert all(f"127.0.0.1:{port}" in text for port in rb.README_PORTS)  # the README shows the defaults
    defaults = build_parser({}).parse_args([])
    assert (defaults.http_port, defaults.grpc_port) == (4318, 4317)  # ... which are the collector's defaults
    used = build_parser(collector_port_env(ports)).parse_args([])
    assert (used.http_port, used.grpc_port) == (ports[4318], ports[4317])
    readme_port = re.compile(r"(?::|-port )(" + "|".join(map(str, rb.README_PORTS)) + r")\b")
    localised = [rb.with_ports(b, ports) for b in SESSION]
    assert [b.line for b in localised if readme_port.search(b.code + repr(b.directives))] == []
    urls = [b.directive("background") for b in localised if b.directive("background")]
    assert urls == [f"http://127.0.0.1:{ports[4318]}/healthz", f"http://127.0.0.1:{ports[4319]}/healthz"]


def test_a_background_block_runs_on_its_stand_in_port_when_the_default_is_taken(tmp_path):
    with socket.socket() as taken:  # "something else listens on the README's port"
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        default = taken.getsockname()[1]
        session = rb.Session(tmp_path, rb.session_env({}), {}, ports=rb.free_ports((default,)))
        collector = f"verdict-collector --data-dir ./d --http-port {default} --grpc-port -1"
        session.run(block_of(f"<!-- readme: background http://127.0.0.1:{default}/healthz -->\n"
                             f"```sh\n{collector}\n```\n"))
        (_, proc) = session.background[0]
        assert isinstance(proc.args, list)
        assert proc.poll() is None and f"--http-port {session.ports[default]} " in proc.args[-1]
        session.close()  # SIGTERM: the collector must exit 0


# ---- the harness itself: each rule can fail ----

def block_of(markdown: str) -> rb.Block:
    (block,) = rb.parse(markdown)
    return block


def test_parse_reads_directives_and_rejects_unknown_ones():
    block = block_of("<!-- readme: exit 3 -->\n<!-- readme: setup lake -->\n```sh\nfalse\n```\n")
    assert (block.lang, block.directive("exit"), block.directive("setup"), block.line) == ("sh", "3", "lake", 3)
    with pytest.raises(ValueError, match="unknown directive 'skip'"):
        rb.parse("<!-- readme: skip -->\n```sh\ntrue\n```\n")
    with pytest.raises(ValueError, match="directly above a code fence"):
        rb.parse("<!-- readme: duckdb -->\ntext\n```sql\nSELECT 1\n```\n")
    with pytest.raises(ValueError, match="unclosed"):
        rb.parse("```sh\ntrue\n")


@pytest.mark.parametrize("markdown, reason", [
    ("```yaml\na: 1\n```\n", "language 'yaml' is not run"),
    ("<!-- readme: file x -->\n```text\nx\n```\n", "takes no directive"),
    ("```sql\nSELECT 1\n```\n", "needs `verdict-sql ARGS` or `duckdb`"),
    ("<!-- readme: background http://127.0.0.1:1/ -->\n```sh\na\nb\n```\n", "one sh command"),
])
def test_blocks_that_cannot_run_are_refused(markdown, reason):
    with pytest.raises(ValueError, match=reason):
        rb.check_runnable(block_of(markdown))


def harness_session(tmp_path) -> rb.Session:
    return rb.Session(tmp_path, rb.session_env({}), {})


def test_a_failing_command_fails_with_its_stderr(tmp_path):
    with pytest.raises(rb.BlockFailed, match=r"(?s)exit status 4, expected 0.*stderr:\nboom"):
        harness_session(tmp_path).run(block_of("```sh\necho boom >&2\nexit 4\n```\n"))
    with pytest.raises(rb.BlockFailed, match="exit status 1"):  # pipefail: a failing producer counts
        harness_session(tmp_path).run(block_of("```bash\nfalse | cat\n```\n"))
    harness_session(tmp_path).run(block_of("<!-- readme: exit 4 -->\n```sh\nexit 4\n```\n"))


def test_console_output_is_compared(tmp_path):
    session = harness_session(tmp_path)
    session.run(block_of("```console\n$ printf 'a\\nb  \\nc\\n'\na\n...\nc\n```\n"))
    with pytest.raises(rb.BlockFailed, match="output differs"):
        session.run(block_of("```console\n$ echo actual\nexpected\n```\n"))
    with pytest.raises(rb.BlockFailed, match="exit status 3"):
        session.run(block_of("```console\n$ exit 3\n```\n"))


def test_files_then_commands_share_the_session_directory(tmp_path):
    session = harness_session(tmp_path)
    session.run(block_of("<!-- readme: file cases.json -->\n```json\n{\"a\": 1}\n```\n"))
    session.run(block_of('```console\n$ python -c "import json; print(json.load(open(\'cases.json\'))[\'a\'])"\n1\n```\n'))
    assert rb.matches("x ... z", "x y\ny z") and not rb.matches("x", "y")


def test_sql_statements_must_return_rows(tmp_path):
    session = harness_session(tmp_path)
    session.run(block_of("<!-- readme: duckdb -->\n```sql\n-- one\nSELECT 1;\nSELECT 2\n```\n"))
    with pytest.raises(rb.BlockFailed, match="returned no rows"):
        session.run(block_of("<!-- readme: duckdb -->\n```sql\nSELECT 1 WHERE false\n```\n"))
    with pytest.raises(rb.BlockFailed, match="DuckDB error"):
        session.run(block_of("<!-- readme: duckdb -->\n```sql\nSELECT nope\n```\n"))


def test_covered_by_needs_a_file_that_runs_the_command(tmp_path):
    session = harness_session(tmp_path)
    session.run(block_of("<!-- readme: covered-by .ci/run -->\n```sh\nmake test  # all\n```\n"))
    with pytest.raises(rb.BlockFailed, match="does not exist|no such file"):
        session.run(block_of("<!-- readme: covered-by tests/nowhere.py -->\n```sh\nmake test\n```\n"))
    with pytest.raises(rb.BlockFailed, match="runs 'make nonsense'"):
        session.run(block_of("<!-- readme: covered-by .ci/run -->\n```sh\nmake nonsense\n```\n"))
    # `make demo` runs `python -m verdict_demo` (Makefile): a test running that module covers it
    assert rb.make_modules("make demo") == ["verdict_demo"]
    with pytest.raises(rb.BlockFailed, match="runs 'make demo' or 'verdict_demo'"):
        session.run(block_of("<!-- readme: covered-by .ci/run -->\n```sh\nmake demo\n```\n"))


def test_a_background_server_is_health_checked_and_must_stop_cleanly(tmp_path):
    session = harness_session(tmp_path)
    with pytest.raises(rb.BlockFailed, match="exited 7 before"):
        session.run(block_of("<!-- readme: background http://127.0.0.1:9/ -->\n```sh\nsh -c 'exit 7'\n```\n"))
    session.background.clear()
    port = _free_port()
    server = f"python -m http.server {port} --bind 127.0.0.1"
    session.run(block_of(f"<!-- readme: background http://127.0.0.1:{port}/ -->\n```sh\n{server}\n```\n"))
    (_, proc) = session.background[0]
    assert proc.poll() is None
    with pytest.raises(rb.BlockFailed, match="exited -15 on SIGTERM"):  # http.server dies of SIGTERM
        session.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_broken_links_are_found(tmp_path):
    (tmp_path / "other.md").write_text("# A `code` title, here\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#a-code-title-here) [gone](missing.md) [bad](other.md#nope) [self](#top)\n"
                    "# Top\n```text\n[in a fence](ignored.md)\n```\n")
    assert rb.broken_links(page) == ["missing.md: no such file", "other.md#nope: no heading #nope in other.md"]


def test_the_session_environment_uses_the_project_venv(tmp_path):
    out = subprocess.run(["bash", "-c", "command -v verdict"], env=rb.session_env({}), capture_output=True, text=True)
    assert out.stdout.strip() == str(Path(rb.sys.executable).parent / "verdict")
