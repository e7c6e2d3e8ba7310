"""`make demo` / `python -m verdict_demo` == `verdict demo`: Verdict end to end on this machine, offline
(docs/demo.md).

The demo needs the collector, the daemon, the app and the fake LLM (extras `server` and `openai`): a
missing extra is named, as the one error envelope, not a traceback. Nothing in the product imports this
package.
"""

import sys

from verdict.cli_errors import print_error

_EXTRAS = "pip install 'verdict-monitor[server,openai]' (or run `make demo`)"


def main(argv: list[str] | None = None) -> int:
    try:
        import verdict_demo.cli  # noqa: F401  # fails here, clearly, when an extra is missing
        from verdict_daemon.cli import main as verdict
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in ("verdict", "verdict_daemon", "verdict_demo", "collector"):
            raise
        print_error("invalid_config", f"the demo needs {exc.name!r}: {_EXTRAS}")
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the demo's own handler is installed: nothing has started yet
        print("verdict demo: interrupted", file=sys.stderr)
        return 130
    return verdict(["demo", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
