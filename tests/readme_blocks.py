"""Run README.md's code blocks (tests/test_readme.py), so the front door cannot rot; the same rules
and directives hold for every page of docs/ (tests/test_docs_blocks.py).

Every fenced block is one of:

* ```text — a diagram or listing; not code, never run (and it may carry no directive).
* ```python — run in-process in a fresh namespace; with `<!-- readme: session -->` it runs instead
  as `python <file>` in the session directory, in order with the shell blocks.
* ```sh / ```bash — run with `bash -euo pipefail` in the session directory; the block must exit 0
  (or the status declared with `<!-- readme: exit N -->`).
* ```console — `$ command` lines, each followed by its expected stdout; `...` matches any text
  (doctest's ELLIPSIS), trailing spaces are ignored. Every command must exit 0 (show a non-zero
  status explicitly: `$ cmd; echo "exit $?"`).
* ```sql — with `<!-- readme: verdict-sql ARGS -->` each statement runs through
  `verdict sql STATEMENT ARGS --format json`; with `<!-- readme: duckdb -->` in plain DuckDB in the
  session directory. Each statement must return at least one row.
* any language with `<!-- readme: file NAME -->` — the block is written to NAME in the session
  directory (a config file the following commands use).
* any block with `<!-- readme: illustration WHY -->` — shown, never run: a synopsis with placeholders, a
  fragment of someone's app, a command that needs what no test has (a cloud bucket, a paid model).
  WHY is required and says so; use it sparingly, a runnable block is worth more.
* any block with `<!-- readme: covered-by PATH... -->` — not run here because those files run it
  (`make demo`, `make test`): each PATH must exist and every command of the block must appear in one
  (for `make TARGET`, the module its Makefile recipe runs with `python -m` counts too).

More directives: `<!-- readme: background URL -->` runs a one-command sh block as a server, waits
until URL answers 200, and stops it with SIGTERM at the end (it must exit 0);
`<!-- readme: setup NAME -->` runs a fixture the test provides (tests/test_readme.py: `lake`) in the
session directory before the block runs. Directives are HTML
comments on the lines directly above the fence; an unknown directive or language is an error.

Ports: the README shows the collector's default ports (README_PORTS); the session runs each block with
every such port (after `:` or `-port `) replaced by a free one picked at the start (`Session.ports`), so a
run never collides with anything else listening there (the test sets the collector's port environment
variables to match, for commands that rely on the defaults).

The session (set up by tests/test_readme.py): one temporary directory, blocks in README order,
`.venv/bin` first on PATH, Verdict/OTel/provider variables of the caller removed, and
`OPENAI_BASE_URL`/`OPENAI_API_KEY` pointing at the local fake OpenAI server (tests/fakes) whose
handler replies like an app model or, to judge prompts, like a judge that fails truncated answers.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SHELLS = ("sh", "bash")
LANGUAGES = ("text", "python", "console", "sql", *SHELLS)
DIRECTIVE = re.compile(r"^<!-- readme: (.+?) -->$")
FENCE = re.compile(r"^```(\S*)$")
COMMAND_TIMEOUT_S = 180
README_PORTS = (4317, 4318, 4319)  # the collector's default gRPC and HTTP ports, and the tokens example's


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int  # of the opening fence, 1-based
    directives: tuple[tuple[str, str], ...] = ()  # (name, argument)
    source: str = "README.md"  # the page, relative to the repository

    def directive(self, name: str) -> str | None:
        return next((arg for n, arg in self.directives if n == name), None)

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line} ({self.lang} block)"

    @property
    def in_process(self) -> bool:
        return self.lang == "python" and self.directive("session") is None and self.directive("illustration") is None

    @property
    def is_code(self) -> bool:
        return self.lang != "text"


class BlockFailed(AssertionError):
    def __init__(self, block: Block, what: str, *, command: str = "", stdout: str = "", stderr: str = "") -> None:
        parts = [f"{block.where}: {what}"]
        if command:
            parts.append(f"command: {command}")
        if stdout:
            parts.append(f"stdout:\n{stdout.rstrip()}")
        if stderr:
            parts.append(f"stderr:\n{stderr.rstrip()}")
        super().__init__("\n".join(parts))


DIRECTIVES = ("session", "exit", "verdict-sql", "duckdb", "file", "covered-by", "background", "setup",
              "illustration")


def parse(text: str, source: str = "README.md") -> list[Block]:
    """Every fenced block of the page `source` with the directives written directly above it."""
    blocks, pending, lines = [], [], text.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        directive = DIRECTIVE.match(lines[i])
        if directive:
            name, _, arg = directive.group(1).partition(" ")
            if name not in DIRECTIVES:
                raise ValueError(f"{source}:{i + 1}: unknown directive {name!r} (known: {', '.join(DIRECTIVES)})")
            pending.append((name, arg.strip()))
        elif fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == "```"), None)
            if end is None:
                raise ValueError(f"{source}:{i + 1}: unclosed code fence")
            code = "\n".join(lines[i + 1 : end]) + "\n"
            blocks.append(Block(fence.group(1), code, i + 1, tuple(pending), source))
            pending, i = [], end
        elif pending:
            raise ValueError(f"{source}:{i + 1}: a readme directive must sit directly above a code fence")
        i += 1
    return blocks


def check_runnable(block: Block) -> None:
    """A block every runner can handle, or a precise reason why not."""
    if block.directive("illustration") is not None:
        if block.lang == "text" or not block.directive("illustration") or len(block.directives) > 1:
            raise ValueError(f"{block.where}: `illustration WHY` takes a reason, stands alone, and is for code "
                             "(a listing is a ```text block)")
        return
    if block.lang not in LANGUAGES and not (block.directive("file") or block.directive("covered-by")):
        raise ValueError(f"{block.where}: language {block.lang!r} is not run; use one of {LANGUAGES}, "
                         "or a `file` / `covered-by` directive")
    if (block.lang == "text" or block.in_process) and block.directives:
        raise ValueError(f"{block.where}: a {block.lang} block without `session` takes no directive")
    if block.lang == "sql" and not (block.directive("verdict-sql") is not None or block.directive("duckdb") is not None
                                    or block.directive("file")):
        raise ValueError(f"{block.where}: a sql block needs `verdict-sql ARGS` or `duckdb`")
    if block.directive("background") and (block.lang not in SHELLS or len(commands(block.code)) != 1):
        raise ValueError(f"{block.where}: a background block is one sh command")


def commands(code: str) -> list[str]:
    """Shell command lines without comments (a trailing backslash continues a line)."""
    joined = code.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(shlex.join(words))
    return out


def make_modules(command: str) -> list[str]:
    """For `make TARGET`: the Python modules its Makefile recipe runs (`$(BIN)/python -m MODULE`),
    so a test that runs the module covers the make command."""
    words = command.split()
    if len(words) != 2 or words[0] != "make":
        return []
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if re.match(rf"{re.escape(words[1])}\s*:", line)), len(lines))
    recipe = []
    for line in lines[start:]:
        if not line.startswith("\t"):
            break
        recipe.append(line)
    return [m for line in recipe for m in re.findall(r"\s-m\s+([\w.]+)", line)]


def statements(sql: str) -> list[str]:
    """SQL statements of a block: `;` ends one; `--` comment lines are dropped."""
    body = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


def matches(expected: str, actual: str) -> bool:
    """doctest ELLIPSIS: `...` stands for any text (also across lines); trailing spaces ignored."""
    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())

    pattern = ".*?".join(re.escape(part) for part in norm(expected).split("..."))
    return re.fullmatch(pattern, norm(actual), flags=re.DOTALL) is not None


def console_steps(code: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"console block: output before the first `$ ` command: {line!r}")
    return [(cmd, "\n".join(out)) for cmd, out in steps]


LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's heading ids: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    anchors = set()
    for line in _outside_fences(markdown):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def _outside_fences(markdown: str) -> list[str]:
    lines, fenced = [], False
    for line in markdown.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def broken_links(path: Path) -> list[str]:
    """Relative links of a markdown file whose file or heading does not exist."""
    broken = []
    for line in _outside_fences(path.read_text()):
        for target in LINK.findall(line):
            if "://" in target or target.startswith("mailto:"):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked.read_text()):
                broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    return broken


def run_in_process(block: Block) -> None:
    exec(compile(block.code, block.where, "exec"), {"__name__": f"readme_block_{block.line}"})


def free_ports(ports: tuple[int, ...]) -> dict[int, int]:
    """A free loopback port for each of `ports` (all bound at once, so they differ)."""
    sockets = [socket.socket() for _ in ports]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return {port: sock.getsockname()[1] for port, sock in zip(ports, sockets, strict=True)}
    finally:
        for sock in sockets:
            sock.close()


def with_ports(block: Block, ports: dict[int, int]) -> Block:
    """`block` with each port of `ports` written after `:` or `-port ` replaced by its stand-in."""
    if not ports:
        return block
    pattern = re.compile(r"(?:(?<=:)|(?<=-port ))(" + "|".join(map(str, ports)) + r")\b")

    def sub(text: str) -> str:
        return pattern.sub(lambda m: str(ports[int(m.group())]), text)

    return replace(block, code=sub(block.code), directives=tuple((n, sub(arg)) for n, arg in block.directives))


@dataclass
class Session:
    """The working directory and processes the README's session blocks share, in README order."""

    workdir: Path
    env: dict[str, str] = field(repr=False)  # the caller's environment: never in a failure report
    setups: dict[str, Callable[[Path], None]] = field(repr=False)
    background: list[tuple[Block, subprocess.Popen]] = field(default_factory=list, repr=False)
    ports: dict[int, int] = field(default_factory=dict)  # README port -> the free port used instead

    def run(self, block: Block) -> None:
        check_runnable(block)
        if block.directive("illustration") is not None:
            return
        block = with_ports(block, self.ports)
        setup = block.directive("setup")
        if setup is not None:
            if setup not in self.setups:
                raise BlockFailed(block, f"unknown setup {setup!r} (known: {', '.join(self.setups)})")
            self.setups[setup](self.workdir)
        if block.directive("covered-by") is not None:
            self._covered(block)
        elif block.directive("file") is not None:
            (self.workdir / (block.directive("file") or "")).write_text(block.code)
        elif block.directive("background") is not None:
            self._background(block)
        elif block.lang in SHELLS:
            self._shell(block)
        elif block.lang == "console":
            for command, expected in console_steps(block.code):
                out = self._exec(block, ["bash", "-o", "pipefail", "-c", command], command)
                if not matches(expected, out.stdout):
                    raise BlockFailed(block, f"output differs; expected:\n{expected}", command=command,
                                      stdout=out.stdout, stderr=out.stderr)
        elif block.lang == "python":
            script = self.workdir / f".readme_block_{block.line}.py"
            script.write_text(block.code)
            self._exec(block, [sys.executable, str(script)], f"python (block at line {block.line})")
        elif block.lang == "sql":
            self._sql(block)

    def _exec(self, block: Block, argv: list[str], shown: str, expect: int = 0) -> subprocess.CompletedProcess:
        try:
            out = subprocess.run(argv, cwd=self.workdir, env=self.env, capture_output=True, text=True,
                                 timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise BlockFailed(block, f"timed out after {COMMAND_TIMEOUT_S} s", command=shown,
                              stdout=str(exc.stdout or ""), stderr=str(exc.stderr or "")) from None
        if out.returncode != expect:
            raise BlockFailed(block, f"exit status {out.returncode}, expected {expect}", command=shown,
                              stdout=out.stdout, stderr=out.stderr)
        return out

    def _shell(self, block: Block) -> None:
        self._exec(block, ["bash", "-euo", "pipefail", "-c", block.code], block.code.strip(),
                   expect=int(block.directive("exit") or 0))

    def _sql(self, block: Block) -> None:
        args = block.directive("verdict-sql")
        for statement in statements(block.code):
            if args is not None:
                out = self._exec(block, ["verdict", "sql", statement, *shlex.split(args), "--format", "json"],
                                 statement)
                rows = json.loads(out.stdout)
            else:
                rows = self._duckdb(block, statement)
            if not rows:
                raise BlockFailed(block, "the statement returned no rows", command=statement)

    def _duckdb(self, block: Block, statement: str) -> list:
        import duckdb

        previous = Path.cwd()
        os.chdir(self.workdir)  # relative paths in the query, as for a reader in that directory
        try:
            return duckdb.connect().execute(statement).fetchall()
        except duckdb.Error as exc:
            raise BlockFailed(block, f"DuckDB error: {exc}", command=statement) from None
        finally:
            os.chdir(previous)

    def _covered(self, block: Block) -> None:
        paths = [ROOT / p for p in (block.directive("covered-by") or "").split()]
        for path in paths:
            if not path.is_file():
                raise BlockFailed(block, f"covered-by {path.relative_to(ROOT)}: no such file")
        texts = {path.relative_to(ROOT): path.read_text() for path in paths}
        for command in commands(block.code):
            terms = (command, *make_modules(command))
            if not any(term in text for term in terms for text in texts.values()):
                raise BlockFailed(block, f"none of {', '.join(map(str, texts))} runs {' or '.join(map(repr, terms))}")

    def _background(self, block: Block) -> None:
        url = block.directive("background")
        (command,) = commands(block.code)
        if url is not None and _answers(url):
            raise BlockFailed(block, f"something else already answers at {url}; stop it first", command=command)
        proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=self.workdir, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.background.append((block, proc))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise BlockFailed(block, f"exited {proc.returncode} before {url} answered", command=command,
                                  stdout=proc.stdout.read() if proc.stdout else "", stderr=proc.stderr.read() if proc.stderr else "")
            if url is not None and _answers(url):
                return
            time.sleep(0.1)
        raise BlockFailed(block, f"{url} did not answer 200 within 60 s", command=command)

    def close(self) -> None:
        """Stop background servers (SIGTERM, in reverse order); each must exit 0."""
        failures = []
        for block, proc in reversed(self.background):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                stdout, stderr = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
            if proc.returncode != 0:
                failures.append(BlockFailed(block, f"background process exited {proc.returncode} on SIGTERM",
                                            stdout=stdout, stderr=stderr))
        self.background.clear()
        if failures:
            raise failures[0]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def session_env(extra: dict[str, str]) -> dict[str, str]:
    """The caller's environment minus Verdict/OTel settings that would change what a command does."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VERDICT_", "OTEL_", "OPENAI_", "ANTHROPIC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    env.update(extra)
    return env
