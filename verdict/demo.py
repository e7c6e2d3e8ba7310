"""`make demo`: the newcomer's end-to-end run. Until the demo issue lands it says what exists."""

import sys


def main() -> int:
    print(
        "Verdict demo: the one-command end-to-end demo (collector + daemon + instrumented app + HTML\n"
        "report) is not built yet. What exists and how to try it:\n"
        "  - tracing SDK:      verdict.init() / verdict.instrument() / verdict.intent_context()\n"
        "  - collector:        .venv/bin/verdict-collector --data-dir ./verdict-data\n"
        "  - SQL on traces:    .venv/bin/verdict sql 'SELECT count(*) FROM llm_calls' --data-dir ./verdict-data\n"
        "  - one-shot monitor: .venv/bin/verdict-pipeline --data-dir ./verdict-data --tenant-id __verdict_local__ "
        "--judge-model openai/gpt-4o-mini --json\n"
        "  - daemon:           .venv/bin/verdict-daemon --config verdict.toml (see docs/daemon.md)\n"
        "The end-to-end path runs in tests/daemon/test_end_to_end.py (`make test`)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
