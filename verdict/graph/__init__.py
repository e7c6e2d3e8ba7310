"""The judge-graph engine: schemas, units, layers, blocks, pipelines, prompts and the executor.

Names resolve lazily so that modules the engine itself imports (verdict.extract, verdict.scale) can import
`verdict.graph.<module>` without a cycle through the executor.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Block": "verdict.graph.compose", "Layer": "verdict.graph.compose",
    "ConfigurationError": "verdict.graph.errors", "ExtractionError": "verdict.graph.errors",
    "TemplateError": "verdict.graph.errors", "UnitError": "verdict.graph.errors",
    "Pipeline": "verdict.graph.pipeline", "Prompt": "verdict.graph.prompt",
    "PromptRegistry": "verdict.graph.prompt", "RunResult": "verdict.graph.results",
    "SampleResult": "verdict.graph.results", "Schema": "verdict.graph.schema", "Unit": "verdict.graph.unit",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'verdict.graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
