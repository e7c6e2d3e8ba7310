"""`instrument()` / `uninstrument()`: wrapt patches on the installed provider SDK classes.

Patches are applied to and removed from the class (or module) objects themselves. Wrappers that an
SDK cached while instrumented (`with_raw_response` binds methods once per resource) stay callable
after `uninstrument()` but are inert: every wrapper first checks that instrumentation is on.

A provider SDK is patched when the app imports it, never imported by Verdict: an SDK already imported
is patched at once, an installed one the app has not imported yet is patched by an import hook right
after its package finishes loading (importing `anthropic` alone costs about a second of CPU).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
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
    """Patch the `openai` and `anthropic` clients, now if imported, else when the app imports them.
    Idempotent; never raises for a patch failure."""
    with _lock:
        if STATE.current is None:
            try:
                STATE.current = standalone_runtime()
            except Exception as exc:  # no redactor importable: trace without content rather than break
                health.record_error("redactor_unavailable", exc)
                STATE.current = standalone_runtime(capture_content=False)
        STATE.instrumented = True
        if _patched or _hook.pending:
            return
        for package, targets in _provider_targets():
            if package in sys.modules:
                _patch(package, targets)
            elif importlib.util.find_spec(package) is not None:
                _hook.pending[package] = targets
        if _hook.pending and _hook not in sys.meta_path:
            sys.meta_path.insert(0, _hook)


def _patch(package: str, targets: Callable[[], list[tuple[Any, str, Any]]]) -> None:
    try:
        found = targets()
    except Exception as exc:  # an SDK version whose layout we do not know
        health.record_error(f"{package}.patch", exc)
        return
    for owner, name, wrapper in found:
        try:
            original = vars(owner)[name]
            wrapt.wrap_function_wrapper(owner, name, wrapper)
        except Exception as exc:
            health.record_error(f"{package}.patch", exc)
            continue
        _patched.append((owner, name, original))


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a pending provider package it asks the other finders, and makes the
    loader they chose patch the package right after executing it."""

    def __init__(self) -> None:
        self.pending: dict[str, Callable[[], list[tuple[Any, str, Any]]]] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.pending:
            return None
        spec = self._others_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module

        def exec_then_patch(module: ModuleType) -> None:
            execute(module)
            with _lock:
                targets = self.pending.pop(fullname, None)
                if targets is not None and STATE.instrumented:
                    _patch(fullname, targets)
                if not self.pending and self in sys.meta_path:
                    sys.meta_path.remove(self)

        loader.exec_module = exec_then_patch  # type: ignore[method-assign]  # this spec's loader only
        return spec


    def _others_spec(self, fullname: str, path: Sequence[str] | None,
                     target: ModuleType | None) -> importlib.machinery.ModuleSpec | None:
        """The spec the import system would use were this finder absent."""
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    return spec
        return None


_hook = _PatchOnImport()


def uninstrument() -> None:
    """Remove every patch (and the import hook); wrappers cached by the SDKs become pass-through."""
    with _lock:
        STATE.instrumented = False
        _hook.pending.clear()
        if _hook in sys.meta_path:
            sys.meta_path.remove(_hook)
        while _patched:
            owner, name, original = _patched.pop()
            setattr(owner, name, original)


def is_instrumented() -> bool:
    return STATE.instrumented

