"""`verdict pipeline`: one monitoring cycle (sample → judge → assign → drift) for cron and CI.

Exit codes: 0 success (also when there was nothing to do); 1 the run raised a regression or
coverage-drop signal and --fail-on-signal was given; 2 a configuration, storage or provider error
or a judge that failed its sentinel health check (`judge_unhealthy`, before any judging or drift),
reported on stderr (nothing on stdout) as the one envelope `{"error": {"code", "message"}}` (docs/cli.md),
never a traceback; 2 `low_coverage` after the summary when an evaluator's usable judgments stayed at or
below [judging] low_coverage_share of at least low_coverage_min_traces traces (default: none of 10);
143 SIGTERM: judging stops (calls in flight get `judging.stop_grace_seconds`), what finished is stored,
drift is not run, and the envelope `interrupted` carries the cycle's summary.
`verdict-pipeline` is its deprecated alias (one release).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from verdict.cli_runner import add_data_dir, add_json, add_tenant, alias_main, checked_tenant, leave
from verdict.tenancy import TenantId
from verdict_daemon import lakes
from verdict_daemon.config import DaemonConfig, load_config, parse_config
from verdict_daemon.errors import DaemonError
from verdict_daemon.tenant_data import no_data

EXIT_OK, EXIT_SIGNAL, EXIT_ERROR = 0, 1, 2


_EPILOG = """\
examples:
  verdict pipeline --config verdict.toml --tenant acme --json --fail-on-signal
  verdict pipeline --data-dir ./verdict-data --tenant acme --judge-model openai/gpt-4o-mini
  verdict pipeline --config verdict.toml --tenant acme --lake-dir /mnt/zone-b/verdict-data --lake-url s3://lake/prod
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0]
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--config", type=Path, help="verdict.toml (evaluators, sampling, judging, drift)")
    add_data_dir(parser, "span lake and state directory (overrides the config)")
    add_tenant(parser, "tenant to run (with --config: one of its [[tenants]]; default its only one)",
               old_flag="--tenant-id")
    parser.add_argument("--fail-on-signal", action="store_true", help="exit 1 when a regression or coverage drop is raised")
    add_json(parser, "print the summary as JSON")
    judging = parser.add_argument_group("judging (without --config, or overriding it)")
    judging.add_argument("--judge-model", help="without --config: a rubric Judge on this model "
                         "('openai/gpt-4o-mini' or 'module:attribute')")
    judging.add_argument("--judge-sentinel-file", type=Path, help="sentinel JSONL: check each rubric/ensemble judge "
                         "first and exit 2 (judge_unhealthy) unless healthy (overrides [sentinel] file)")
    drift = parser.add_argument_group("drift and clusters")
    drift.add_argument("--as-of", help="ISO time the drift windows end at (default: now, UTC)")
    drift.add_argument("--registry-mode", choices=("off", "active"),
                       help="clusters: off = explicit intent keys; active = the tenant's active cluster registry "
                       "version (verdict cluster; none active -> no_active_registry) [default: the config's "
                       "[clustering] registry_mode, else off]")
    lakes.add_arguments(parser)


# --as-of must leave room for the longest windows on either side (config.py bounds them to ~10 years).
AS_OF_RANGE = (datetime(1980, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC))


def _as_of(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        at = datetime.fromisoformat(text)
        at = at if at.tzinfo else at.replace(tzinfo=UTC)
        utc = at.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: an offset that moves it past year 9999
        raise DaemonError("invalid_config", f"--as-of: {text[:80]!r} is not an ISO 8601 time") from None
    low, high = AS_OF_RANGE
    if not low <= utc < high:
        raise DaemonError("invalid_config", f"--as-of: {text[:80]!r} is outside {low:%Y-%m-%d} .. {high:%Y-%m-%d} (UTC)")
    return at


def _config(args: argparse.Namespace) -> DaemonConfig:
    config = _base_config(args)
    config = config.model_copy(update={"lake": lakes.with_arguments(config.lake, args)})
    if args.judge_sentinel_file is not None:
        sentinel = config.sentinel.model_copy(update={"file": args.judge_sentinel_file.resolve()})
        config = config.model_copy(update={"sentinel": sentinel})
    return config


def _base_config(args: argparse.Namespace) -> DaemonConfig:
    if args.config is not None:
        config = load_config(args.config)
        if args.data_dir is not None:
            config = config.model_copy(update={"data_dir": args.data_dir.resolve()})
        return config
    if args.data_dir is None or args.judge_model is None:
        raise DaemonError("invalid_config", "give --config, or --data-dir and --judge-model")
    tenant = checked_tenant(args.tenant)  # the config's one tenant
    return parse_config({"data_dir": str(args.data_dir.resolve()), "tenants": [{"id": tenant}],
                         "evaluators": [{"name": "default", "kind": "rubric", "model": args.judge_model}]})


class _Terminated:
    """SIGTERM during the cycle: a plain flag the judging loop polls (safe to set in a signal handler)."""

    def __init__(self) -> None:
        self.received = False

    def __call__(self, signum: int, frame: object) -> None:
        self.received = True

    def is_set(self) -> bool:
        return self.received


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    terminated = _Terminated()
    on_main = threading.current_thread() is threading.main_thread()  # where signal handlers can be set
    previous = signal.signal(signal.SIGTERM, terminated) if on_main else None
    try:
        code, summary = _cycle(args, terminated.is_set)
    finally:
        if on_main:
            signal.signal(signal.SIGTERM, previous)
    if terminated.received:
        raise DaemonError("interrupted", _interrupted(summary), {"summary": summary})
    print(json.dumps(summary, default=str, indent=1) if args.json else _text(summary), flush=True)
    if summary["low_coverage"]:  # after the summary, which shows what was judged: a failure with or without
        raise DaemonError("low_coverage", "; ".join(summary["low_coverage"]))  # --fail-on-signal
    return code


def _interrupted(summary: dict) -> str:
    left = sum(e["pending"] - e["judged"] - e["errors"] - e["no_content"] for e in summary["evaluators"])
    return (f"stopped by SIGTERM: {summary['judged']} judgment(s), {summary['errors']} error attempt(s) and "
            f"{summary['no_content']} no-content attempt(s) stored; {left} trace(s) left for the next run; "
            + (f"{len(summary['drift_runs'])} drift run(s) stored" if summary["drift_runs"] else "drift was not run"))


def _cycle(args: argparse.Namespace, should_stop: Callable[[], bool]) -> tuple[int, dict]:
    from verdict_daemon.service.cycle import build_evaluators, run_cycle
    from verdict_daemon.service.sentinel_health import HealthGate

    as_of = _as_of(args.as_of)
    config = _config(args)
    tenant = _tenant(args, config)
    evaluators = build_evaluators(config)
    gate = HealthGate(config.sentinel, evaluators, config.judging.concurrency)  # a bad sentinel file fails here
    registry_mode = args.registry_mode or config.clustering.registry_mode
    missing = no_data(tenant, config.data_dir, lakes.open_lakes(config.data_dir, config.lake))  # before the cycle writes
    summary = run_cycle(config, tenant, as_of, evaluators, registry_mode, should_stop, gate=gate)
    summary["warnings"] += [missing.message] if missing is not None else []
    return (EXIT_SIGNAL if args.fail_on_signal and summary["adverse_signals"] else EXIT_OK), summary


def _tenant(args: argparse.Namespace, config: DaemonConfig) -> TenantId:
    """--tenant; with --config, one of its [[tenants]] (its only one when --tenant is not given)."""
    configured = [str(t.id) for t in config.tenants]
    if not args.tenant and args.config is not None and len(configured) == 1:
        return checked_tenant(configured[0])
    tenant = checked_tenant(args.tenant)
    if args.config is not None and tenant not in configured:
        raise DaemonError("invalid_config", f"--tenant {tenant!r} is not a [[tenants]] entry of {args.config} "
                                            f"(configured: {', '.join(configured)})")
    return tenant


def main(argv: list[str] | None = None) -> int:
    """`verdict-pipeline`: the deprecated alias of `verdict pipeline`."""
    return alias_main("verdict-pipeline", "pipeline", add_arguments, run, argv)


def _text(summary: dict) -> str:
    lines = [f"tenant {summary['tenant_id']} as of {summary['as_of']}: sampled {summary['sampled']}, "
             f"judged {summary['judged']}, errors {summary['errors']}, no content {summary['no_content']}, "
             f"missing intent key {summary['missing_intent_key']}"]
    lines += [f"  warning: {w}" for w in summary["warnings"]]
    for h in summary["sentinel_health"]:
        lines.append(f"  sentinel {h['evaluator']}: {h['status']} ({h['reason']})")
    for e in summary["evaluators"]:
        c = e["coverage"]
        lines.append(f"  evaluator {e['name']} ({e['fingerprint'][:12]}): coverage {c['usable']}/{c['sampled_traces']}"
                     + (f"; {e['early_stop']}" if e["early_stop"] else ""))
    if (x := summary["evaluation_export"]) is not None:
        lines.append(f"  evaluation export: {x['attempts']} attempt(s), {x['records']} record(s) sent; "
                     f"{x['pending']} waiting" + (f" (failed: {x['error']})" if x["error"] else ""))
    for r in summary["drift_runs"]:
        lines.append(f"  drift {r['evaluator']}: cells {r['cells']}, tested {r['tested']}"
                     + (f" ({r['not_tested']})" if r["not_tested"] else ""))
    for s in summary["signals"]:
        lines.append(f"  signal {s['kind']}: {s['cluster']} / {s['dimension']} ({s['evaluator']}) "
                     f"{s['baseline_level']} -> {s['current_level']}, adjusted p {s['adjusted_p']}")
    if not summary["signals"]:
        lines.append("  no signals")
    return "\n".join(lines)


if __name__ == "__main__":
    leave(main(), threads_may_linger=True)
