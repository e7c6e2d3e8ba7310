"""`make demo` / `python -m verdict_demo`: Verdict end to end on this machine, offline (docs/demo.md).

The demo needs the collector, the daemon, the app and the fake LLM (extras `server` and `openai`): a
missing extra is named, not a traceback. Nothing in the product imports this package.
"""

import sys

_EXTRAS = "pip install 'verdict-monitor[server,openai]' (or run `make demo`)"


def main(argv: list[str] | None = None) -> int:
    try:
        from verdict_demo.cli import main as run
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in ("verdict", "verdict_daemon", "verdict_demo", "collector"):
            raise
        print(f"verdict demo: error [invalid_config]: the demo needs {exc.name!r}: {_EXTRAS}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the demo's own handler is installed: nothing has started yet
        print("verdict demo: interrupted", file=sys.stderr)
        return 130
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
