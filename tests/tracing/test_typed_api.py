"""The tracing SDK's annotations, as a caller's type checker reads them (issue 18, item 5).

`make typecheck` checks the package itself; these cases check a few lines of caller code against
the package's annotations with the project's mypy config, so a wrong public annotation (which the
package's own checks can miss when its own code never crosses it) fails here.
"""

import textwrap
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]


def mypy_errors(tmp_path: Path, source: str) -> list[str]:
    client = tmp_path / "client.py"
    client.write_text(textwrap.dedent(source))
    # follow-imports=silent: the package's modules give the types, only the caller's lines are
    # reported; a cache of its own so this never invalidates `make typecheck`'s.
    out, err, status = api.run([
        "--config-file", str(ROOT / "pyproject.toml"), "--follow-imports", "silent",
        "--cache-dir", str(ROOT / ".mypy_cache" / "api-tests"), str(client),
    ])
    assert status in (0, 1), err
    return [line for line in out.splitlines() if ": error:" in line]


def test_the_token_of_an_active_call_detaches_its_context(tmp_path: Path) -> None:
    # LLMCall.activate() was annotated `-> object`, so detaching its token was a type error.
    errors = mypy_errors(tmp_path, """
        from opentelemetry import context
        from verdict.tracing.call import LLMCall

        def around(call: LLMCall) -> None:
            token = call.activate()
            context.detach(token)
    """)
    assert errors == []


def test_the_checker_sees_a_wrong_token(tmp_path: Path) -> None:
    # The same check reports a mismatch: the case above can fail.
    errors = mypy_errors(tmp_path, """
        from opentelemetry import context

        def around() -> None:
            context.detach(object())
    """)
    assert len(errors) == 1 and "detach" in errors[0]
