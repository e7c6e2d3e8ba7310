"""Verdict's tracing SDK: `init`, `instrument`, `intent_context`, `conversation_context` and friends.

Imports only OpenTelemetry, wrapt and the standard library; provider SDKs are patched when the app
imports them (at once if already imported), never imported by Verdict.
"""

from __future__ import annotations

from verdict.tracing.config import TracingConfig
from verdict.tracing.context import (
    Conversation,
    carry_context,
    conversation_context,
    current_intent_key,
    current_workload,
    intent_context,
    workload_context,
)
from verdict.tracing.health import TracingStats, reset_stats, stats
from verdict.tracing.instrument import instrument, is_instrumented, uninstrument
from verdict.tracing.peers import ContextStampProcessor
from verdict.tracing.setup import flush, init, shutdown

__all__ = [
    "ContextStampProcessor",
    "Conversation",
    "TracingConfig",
    "TracingStats",
    "carry_context",
    "conversation_context",
    "current_intent_key",
    "current_workload",
    "flush",
    "init",
    "instrument",
    "intent_context",
    "is_instrumented",
    "reset_stats",
    "shutdown",
    "stats",
    "uninstrument",
    "workload_context",
]
