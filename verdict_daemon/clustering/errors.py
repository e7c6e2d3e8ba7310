"""The cluster registry's closed error vocabulary (what `verdict-cluster` prints as `"error"`)."""

from __future__ import annotations

CLUSTER_ERROR_CODES: dict[str, str] = {
    "invalid_request": "a flag or argument is missing or malformed (the message names it); nothing was written",
    "unknown_version": "no registry version with this id exists for this tenant",
    "unknown_cluster": "no version of this tenant's registry has a cluster with this id",
    "generation_conflict": "--expected-generation is not the tenant's current generation (someone else changed "
                           "the active pointer first); re-read it with inspect and retry",
    "validation_failed": "the version failed validation, or has not passed it yet (activate needs a validated version)",
    "rollback_target_not_activated": "rollback may only return to a version that was activated before",
    "no_active_registry": "the tenant has no active registry version (fit, assign, validate and activate one)",
    "model_unavailable": "the embedding model could not be loaded from --model-path (no download is attempted)",
    "analysis_index_pending": "traces before the cutoff are not in the analysis index yet; run normalize until "
                              "it prints \"complete\": true",
    "storage_locked": "state.duckdb stayed locked by another process past the lock timeout",
    "storage_error": "state.duckdb or the span lake could not be read or written",
    "internal_error": "an unexpected failure (a bug); details only with VERDICT_DEBUG=1",
}


class ClusterError(Exception):
    """A failure with a code from CLUSTER_ERROR_CODES and a message safe to print."""

    def __init__(self, code: str, message: str, details: dict | None = None) -> None:
        if code not in CLUSTER_ERROR_CODES:
            raise ValueError(f"unknown cluster registry error code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}  # extra JSON-ready fields of the error object
