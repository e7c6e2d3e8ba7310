"""`instrument()` / `uninstrument()`: wrapt patches on the installed provider SDK classes.

Patches are applied to and removed from the class (or module) objects themselves. Wrappers that an
SDK cached while instrumented (`with_raw_response` binds methods once per resource) stay callable
after `uninstrument()` but are inert: every wrapper first checks that instrumentation is on.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from typing import Any

import wrapt

from verdict.tracing import health
from verdict.tracing.runtime import STATE, standalone_runtime

_lock = threading.Lock()
# (owner, attribute, the owner's own attribute value before patching)
_patched: list[tuple[Any, str, Any]] = []


def _provider_targets() -> list[tuple[str, Callable[[], list[tuple[Any, str, Any]]]]]:
    from verdict.tracing import anthropic_patch, openai_patch

    return [("openai", openai_patch.targets), ("anthropic", anthropic_patch.targets)]


def instrument() -> None:
    """Patch the installed `openai` and `anthropic` clients. Idempotent; never raises for a patch failure."""
    with _lock:
        if STATE.current is None:
            try:
                STATE.current = standalone_runtime()
            except Exception as exc:  # no redactor importable: trace without content rather than break
                health.record_error("redactor_unavailable", exc)
                STATE.current = standalone_runtime(capture_content=False)
        STATE.instrumented = True
        if _patched:
            return
        for package, targets in _provider_targets():
            if importlib.util.find_spec(package) is None:
                continue
            try:
                found = targets()
            except Exception as exc:  # an SDK version whose layout we do not know
                health.record_error(f"{package}.patch", exc)
                continue
            for owner, name, wrapper in found:
                try:
                    original = vars(owner)[name]
                    wrapt.wrap_function_wrapper(owner, name, wrapper)
                except Exception as exc:
                    health.record_error(f"{package}.patch", exc)
                    continue
                _patched.append((owner, name, original))


def uninstrument() -> None:
    """Remove every patch; wrappers cached by the SDKs become pass-through."""
    with _lock:
        STATE.instrumented = False
        while _patched:
            owner, name, original = _patched.pop()
            setattr(owner, name, original)


def is_instrumented() -> bool:
    return STATE.instrumented

