"""Chats landed for real: the chat app (tests/daemon/conversation_app.py, its own process per tenant: the real SDK,
`verdict.conversation_context`, the real openai client against the fake OpenAI server answering from `answers`)
sends each tenant's turns to a collector process that maps each token to its tenant."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.collector.conftest import Collector
from tests.daemon.cli import env
from tests.fakes import Reply


def land_chats(tmp: Path, server, answers: dict[str, str], tokens: dict[str, str],
               turns: dict[str, list]) -> Path:
    """The data dir after every tenant's app sent its `turns` (tenant -> turns; `tokens`: tenant -> token)."""
    server.reset()  # a module-scoped server: `fake_openai` is per test
    server.handler = lambda request: Reply(answers[next(  # keyed by the turn's user message (a tool result may follow)
        m["content"] for m in reversed(request.body["messages"]) if m["role"] == "user")])
    token_file = tmp / "tokens.yaml"
    token_file.write_text("".join(f'"{token}": {tenant}\n' for tenant, token in tokens.items()))
    collector = Collector(tmp / "data", ("--tokens", str(token_file))).start()
    try:
        for tenant, sent in turns.items():
            app = subprocess.run([sys.executable, "-m", "tests.daemon.conversation_app", collector.url,
                                  server.base_url, tokens[tenant], json.dumps(sent)],
                                 capture_output=True, text=True, env=env(), timeout=300)
            assert app.returncode == 0, app.stderr[-2000:]
    finally:
        assert collector.stop() == 0, "".join(collector.log)
        server.reset()
    return collector.data_dir
