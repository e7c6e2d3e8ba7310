"""The cluster registry's errors: the codes of the one closed set (verdict.cli_errors) that `verdict cluster`
and the registry raise."""

from __future__ import annotations

from typing import Any

from verdict.cli_errors import CliError, ErrorCode

CLUSTER_ERROR_CODES: tuple[ErrorCode, ...] = (
    "invalid_config", "unknown_version", "unknown_cluster", "generation_conflict", "validation_failed",
    "rollback_target_not_activated", "no_active_registry", "model_unavailable", "analysis_index_pending",
    "storage_locked", "storage_error", "tenant_required", "invalid_tenant", "internal_error",
)


class ClusterError(CliError):
    """A failure with a code from CLUSTER_ERROR_CODES and a message safe to print."""

    def __init__(self, code: ErrorCode, message: str, details: dict[str, Any] | None = None) -> None:
        if code not in CLUSTER_ERROR_CODES:
            raise ValueError(f"unknown cluster registry error code {code!r}")
        super().__init__(code, message, details)
