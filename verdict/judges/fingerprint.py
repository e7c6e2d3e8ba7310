"""Evaluator fingerprints: one SHA-256 for everything that can change what a judge says.

Hashed (as canonical JSON: sorted keys, no whitespace, UTF-8): the judge kind, the providers and model
names, the models' endpoints (normalised, without credentials: two servers may serve different weights
under one name; a model without `identity`, such as ScriptedModel, adds nothing), the rubric (name, version, dimensions with descriptions), the prompt templates, and the
behaviour-relevant configuration (sampling parameters such as temperature and max tokens, and the
output contract: reply format, schema, markers, evidence rule). Not hashed: anything that only changes
how fast or how often a call is made (concurrency, retries, timeouts, rate limits, caching), so that
results of one evaluator stay comparable across deployments. Results with different fingerprints are
never pooled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from verdict.judges.rubric import Rubric

# Bumped when the hashed payload's layout changes, so old and new fingerprints never collide.
FINGERPRINT_VERSION = 1
# Request parameters that change neither the prompt nor the sampling: kept out of the fingerprint.
IRRELEVANT_PARAMS = frozenset({"cache_salt", "timeout"})


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return sorted(value, key=repr) if isinstance(value, set | frozenset) else list(value)
    raise TypeError(f"{type(value).__name__} cannot be part of an evaluator fingerprint")


def provider_of(model_name: str) -> str:
    """"openai/gpt-4o-mini" -> "openai" (model names are "provider/name")."""
    provider, sep, _ = model_name.partition("/")
    return provider if sep else "unknown"


def model_identity(model: Any) -> Mapping[str, Any] | None:
    """What a model client says identifies it besides its name (`identity`: the endpoint), if anything."""
    identity = getattr(model, "identity", None)
    return dict(identity) if isinstance(identity, Mapping) and identity else None


def evaluator_fingerprint(*, kind: str, models: Sequence[str], rubric: Rubric | None,
                          prompts: Mapping[str, str], params: Mapping[str, Any],
                          contract: Mapping[str, Any], identities: Sequence[Mapping[str, Any] | None] = ()) -> str:
    payload = {
        "fingerprint_version": FINGERPRINT_VERSION,
        "kind": kind,
        "providers": [provider_of(m) for m in models],
        "models": list(models),
        "rubric": rubric.canonical() if rubric is not None else None,
        "prompts": dict(prompts),
        "params": {k: v for k, v in params.items() if k not in IRRELEVANT_PARAMS},
        "contract": dict(contract),
    }
    if any(identities):
        payload["identities"] = list(identities)
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def combined_fingerprint(kind: str, components: Sequence[str], config: Mapping[str, Any]) -> str:
    """An ensemble's fingerprint: its members' fingerprints (as a multiset: voting ignores order) plus
    the voting rule."""
    payload = {"fingerprint_version": FINGERPRINT_VERSION, "kind": kind, "components": sorted(components),
               "config": dict(config)}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
