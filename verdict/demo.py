"""`make demo`: the newcomer's end-to-end run. Until the demo issue lands it says what exists."""

import sys


def main() -> int:
    print(
        "Verdict demo: the end-to-end demo (collector + daemon + instrumented app) is not built yet.\n"
        "Built so far: the judge-graph engine (see README, 'Judge graphs').\n"
        "Run `make test` to exercise it."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
