"""`verdict report`: write one tenant's monitoring state as a single self-contained HTML file.

Exit codes: 0 the report was written; 2 it was not (bad option, missing data dir, invalid or unknown
tenant, unreadable or locked state, unwritable output), with the one error envelope
`{"error": {"code", "message"}}` on stderr and nothing on stdout (docs/cli.md). Never a
traceback (VERDICT_DEBUG=1 re-raises unexpected errors). The output file is written to a temporary
name and renamed, so a failed run leaves no partial file (and an existing report untouched).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from verdict.cli_runner import add_data_dir, add_json, add_tenant
from verdict_daemon import lakes
from verdict_daemon.config import Lake

EXIT_OK = 0

_EPILOG = """\
panels: drift signals of the latest run per evaluator (adjusted p, Cliff's delta with its CI, minimum
detectable effect, example traces with the redacted conversation and the judge's rationale); latest pass
rate per cluster x dimension (heatmap); daily pass rate per cluster x dimension with 95% Wilson bands and
the drift windows shaded; coverage (UNCLEAR/ERROR shares); judge health (sentinel checks) and probe
results; human review queue; judge tokens and cost. Empty panels say why they are empty.

The file has inline CSS and SVG only (no script, no network at view time) and redacted content only.

exit codes: 0 written; 2 error (codes: invalid_config, tenant_required, unknown_tenant (the message lists the
tenants with data), storage_locked, storage_error, internal_error); 3 invalid_tenant as one line {"error": {"code", "message"}} on stderr; never a traceback
(VERDICT_DEBUG=1 re-raises unexpected errors). A failed run writes nothing.

example:
  verdict report --data-dir ./verdict-data --tenant acme --out report.html
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    add_data_dir(parser, "required: the data directory of `verdict collector` and the daemon (span lake and "
                 "state.duckdb)")
    add_tenant(parser, "tenant to report on")
    parser.add_argument("--out", type=Path, default=Path("report.html"), metavar="FILE",
                        help="HTML file to write (default: report.html; its directory must exist)")
    add_json(parser, 'print {"report": path, ...} as JSON on stdout')
    more = parser.add_argument_group("probe runs and locking")
    more.add_argument("--probes", type=Path, action="append", default=[], metavar="RUN_JSON|DIR",
                      help="a probe-run artifact (`verdict probes run --out`) to show, or a directory of them (its "
                      "latest run per suite version); repeat for several (default: DATA_DIR/probes, where the "
                      "daemon's probes job writes, when it exists)")
    more.add_argument("--lock-timeout", type=float, default=10.0, metavar="SECONDS",
                      help="how long to wait for state.duckdb held by another process (default 10)")
    lakes.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    summary = _write(args)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"wrote {summary['report']} (tenant {summary['tenant']}: {summary['evaluators']} evaluator(s), "
              f"{summary['signals']} signal(s), {summary['bytes']:,} bytes)")
    return EXIT_OK


def _write(args: argparse.Namespace) -> dict:
    from verdict_daemon.report.render import render
    from verdict_daemon.report.writer import build_report, checked_out, write_html

    checked_out(args.out)  # fail before the work, not after it
    lake = lakes.with_arguments(Lake(), args)
    data = build_report(args.data_dir, args.tenant, probes=args.probes, lock_timeout=args.lock_timeout, lake=lake)
    path = write_html(render(data), args.out)
    return {"report": str(path), "tenant": data.tenant, "evaluators": len(data.evaluators),
            "signals": data.signal_count, "sampled_traces": data.sampled_traces, "bytes": path.stat().st_size}
