"""Optional on-disk response cache so that rerunning a judge graph skips paid calls.

Keyed by (model name and endpoint, messages, params, JSON schema, top_logprobs). One JSON file per entry,
written to a temporary file and renamed into place, so concurrent threads and processes never
see a partial entry; an unreadable entry is a miss. Cached replies report `cached=True` and
cost 0 (no call was paid for), with the token counts of the original call.

Identical requests get the identical cached reply. To draw several independent samples of the
same prompt (an ensemble of `repeat` judges), give each a distinct `params["cache_salt"]`: it
is part of the key and never sent to the provider.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .base import ModelRequest, ModelResponse, TokenLogprob, Usage

_FORMAT = 1


def request_key(model: str, request: ModelRequest) -> str:
    material = {
        "format": _FORMAT,
        "model": model,
        "messages": [[m.role, m.content] for m in request.messages],
        "params": dict(request.params),
        "schema": request.json_schema,
        "top_logprobs": request.top_logprobs,
    }
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _encode(response: ModelResponse) -> dict[str, Any]:
    return {
        "model": response.model,
        "text": response.text,
        "finish_reason": response.finish_reason,
        "logprobs": None if response.logprobs is None
        else [[lp.token, lp.logprob, [list(alt) for alt in lp.top]] for lp in response.logprobs],
        "usage": [response.usage.input_tokens, response.usage.output_tokens],
    }


def _decode(data: dict[str, Any]) -> ModelResponse:
    logprobs = data["logprobs"]
    input_tokens, output_tokens = data["usage"]
    return ModelResponse(
        text=data["text"],
        model=data["model"],
        finish_reason=data["finish_reason"],
        logprobs=None if logprobs is None
        else tuple(TokenLogprob(t, float(lp), tuple((a, float(b)) for a, b in top)) for t, lp, top in logprobs),
        usage=Usage(int(input_tokens), int(output_tokens), 0.0),
        cached=True,
    )


class ResponseCache:
    """A directory of cached replies; safe to share between threads and processes."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> ModelResponse | None:
        try:
            with open(self._path(key), encoding="utf-8") as handle:
                return _decode(json.load(handle))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or unreadable: treat as a miss and let the call overwrite it

    def put(self, key: str, response: ModelResponse) -> None:
        path = self._path(key)
        path.parent.mkdir(exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(_encode(response), handle, ensure_ascii=False)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
