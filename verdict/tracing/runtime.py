"""The state every patched call reads: tracer, stamping constants, content policy.

One module-level `Runtime`, replaced (never mutated) by `init()` and `instrument()`, so a call in
flight keeps a consistent view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.trace import Tracer

from verdict import __version__
from verdict.tracing.config import DEFAULT_MAX_CONTENT_BYTES, capture_content_from_env
from verdict.tracing.content import Redactor

if TYPE_CHECKING:
    from verdict.tracing.callspan import CallSpans

SCOPE = "verdict.tracing"


@dataclass(frozen=True, slots=True)
class Runtime:
    tracer: Tracer
    tenant_id: str | None
    capture_content: bool
    max_content_bytes: int
    redactor: Redactor | None
    # True when Verdict's export pipeline builds the content attributes off the calling thread.
    deferred_content: bool
    # True when response attributes may be recorded on the export thread too: only when Verdict owns
    # the provider, so no other exporter sees a span before they are added.
    deferred_response: bool
    dup_system: bool
    # Starts the calls' light spans when Verdict created the provider (verdict.tracing.callspan); None: the SDK's.
    call_spans: CallSpans | None = None


def load_redactor() -> Redactor:
    """The default redactor; content is never captured without one."""
    from verdict.redact import default_redactor

    return default_redactor


def verdict_tracer(provider: trace.TracerProvider | None, builtin_redaction: bool) -> trace.Tracer:
    """Verdict's tracer (`provider` None: the global one, resolved lazily). Its scope claims the
    built-in redaction when that redactor produces the content, so an authenticated collector of the
    same version can skip redacting it again (collector/redaction.py)."""
    from verdict.redact import SDK_REDACTION_ATTRIBUTE

    attributes = {SDK_REDACTION_ATTRIBUTE: __version__} if builtin_redaction else None
    if provider is None:
        return trace.get_tracer(SCOPE, __version__, attributes=attributes)
    return provider.get_tracer(SCOPE, __version__, attributes=attributes)


def standalone_runtime(capture_content: bool | None = None) -> Runtime:
    """Runtime for `instrument()` without `init()`: the app's global provider, synchronous content."""
    from verdict.tracing.semconv import emit_deprecated_system

    capture = capture_content_from_env() if capture_content is None else capture_content
    return Runtime(
        tracer=verdict_tracer(None, builtin_redaction=capture),
        tenant_id=None,
        capture_content=capture,
        max_content_bytes=DEFAULT_MAX_CONTENT_BYTES,
        redactor=load_redactor() if capture else None,
        deferred_content=False,
        deferred_response=False,
        dup_system=emit_deprecated_system(),
    )


class _Holder:
    current: Runtime | None = None
    instrumented: bool = False


STATE = _Holder()
