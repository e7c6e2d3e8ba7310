"""The daemon side of behaviour probes (verdict.probes): a suite and the target and judge models resolved
from the strings a command line or verdict.toml gives, and where a data dir keeps the runs. Shared by
`verdict probes` (verdict_daemon.cli.probes), the daemon's probes job (verdict_daemon.service.probe_job)
and the report."""

from __future__ import annotations

from typing import Any

from verdict.cli_errors import ErrorCode
from verdict_daemon.errors import DaemonError

PROBES_DIR = "probes"  # the data dir's probe store: one tenant=<id>/ directory per tenant (verdict.probes.tenant_dir)


def load_suite_spec(spec: str) -> Any:
    from verdict.probes.suite import SuiteError, resolve_suite

    try:
        return resolve_suite(spec)
    except SuiteError as exc:
        raise DaemonError("invalid_suite", str(exc)) from None


def resolve_model_spec(spec: str, base_url: str | None, flag: str) -> Any:
    """A provider model string (with an optional endpoint) or a 'module:attribute' Model."""
    from verdict.models.registry import resolve_model
    from verdict_daemon.service.evaluators import resolve_judge_model

    if ":" in spec and "/" not in spec.partition(":")[0]:
        if base_url is not None:
            raise DaemonError("invalid_config", f"{flag} {spec!r}: a base URL applies to provider model strings only")
        try:
            return resolve_judge_model(spec)
        except DaemonError as exc:
            raise DaemonError("invalid_config", f"{flag}: {exc.message}") from None
    try:
        return resolve_model(spec, **({"base_url": base_url} if base_url else {}))
    except ValueError as exc:
        code: ErrorCode = "provider_unavailable" if "no API key" in str(exc) else "invalid_config"
        raise DaemonError(code, f"{flag} {spec!r}: {exc}") from None


def format_rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
