"""Server-side redaction: nothing a sender wrote reaches disk unredacted, whatever its dialect.

Modes: `content` (default) runs the redactor over every value that can hold content: span,
event, link and log-record attributes, log bodies, resource attributes, nested lists and maps,
and the message columns; only the structural keys of `STRUCTURAL_KEYS` / `STRUCTURAL_PREFIXES`
(ids, model names, enums, counts: docs/redaction.md lists them) are stored as sent. `all`
redacts the structural keys too; `off` stores everything as sent. The engine is
`verdict.redact`, imported when the collector starts.

Trusting the SDK per span (`--trust-sdk-redaction authenticated`, the default): the message
content the Verdict SDK wrote (`gen_ai.input.messages`, `gen_ai.output.messages`,
`gen_ai.system_instructions` as sent) is not redacted a second time for spans whose
instrumentation scope carries `verdict.redaction.version` equal to this collector's engine
version, *and* which came with a valid token. Everything else (other attributes, messages a
dialect mapper built, no token, another exporter, an older or newer SDK) is redacted.
Re-redacting already-redacted content changes nothing (the engine is idempotent) but is the
collector's largest CPU cost.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from verdict import semconv as sc
from verdict.redact import SDK_REDACTION_ATTRIBUTE  # the claim the SDK's tracer scope carries

MODES = ("content", "all", "off")
TRUST_MODES = ("authenticated", "never")
CONTENT_CACHE_ENTRIES = 2048

# Attribute keys whose values are structure, not content: stored as sent in `content` mode.
# Everything not listed here is redacted. Keep it to ids, names from a closed vocabulary, model
# names, enums and numbers; a free-text key never belongs here.
STRUCTURAL_KEYS = frozenset({
    # OTel GenAI semconv
    sc.OPERATION_NAME, sc.PROVIDER_NAME, sc.SYSTEM, sc.REQUEST_MODEL,
    sc.RESPONSE_MODEL, sc.RESPONSE_ID, sc.RESPONSE_FINISH_REASONS, sc.OUTPUT_TYPE,
    sc.REQUEST_TEMPERATURE, sc.REQUEST_TOP_P, sc.REQUEST_TOP_K, sc.REQUEST_MAX_TOKENS,
    sc.REQUEST_FREQUENCY_PENALTY, sc.REQUEST_PRESENCE_PENALTY, sc.REQUEST_SEED,
    sc.REQUEST_CHOICE_COUNT, sc.TOOL_NAME, sc.TOOL_CALL_ID, sc.TOOL_TYPE,
    sc.OPENAI_REQUEST_SERVICE_TIER, sc.OPENAI_RESPONSE_SERVICE_TIER,
    sc.SERVER_ADDRESS, sc.SERVER_PORT, sc.ERROR_TYPE, sc.HTTP_RESPONSE_STATUS_CODE, sc.EVENT_NAME,
    sc.EVALUATION_NAME, sc.EVALUATION_SCORE_LABEL, sc.EVALUATOR_NAME, sc.EVALUATOR_VERSION, sc.EVALUATOR_TYPE,
    sc.EVALUATOR_ID,
    # Verdict: validated by the collector (a refused intent key is redacted: collector.flatten)
    sc.INTENT_KEY, sc.WORKLOAD, SDK_REDACTION_ATTRIBUTE, sc.TENANT_ID, sc.EVALUATION_RECORD_ID,
    sc.EVALUATION_RUBRIC_NAME, sc.EVALUATION_RUBRIC_VERSION, sc.EVALUATION_JUDGE_MODELS,
    # OpenInference
    sc.OPENINFERENCE_SPAN_KIND, sc.OPENINFERENCE_MODEL_NAME, sc.OPENINFERENCE_PROVIDER, sc.OPENINFERENCE_SYSTEM,
    sc.OPENINFERENCE_INPUT_MIME_TYPE, sc.OPENINFERENCE_OUTPUT_MIME_TYPE,
    # OpenLLMetry
    sc.OPENLLMETRY_REQUEST_TYPE, sc.OPENLLMETRY_IS_STREAMING, sc.OPENLLMETRY_SPAN_KIND,
    # Anthropic SDK
    sc.ANTHROPIC_STOP_REASON,
    # Vercel AI SDK
    sc.VERCEL_OPERATION_ID, sc.VERCEL_OPERATION_NAME, sc.VERCEL_MODEL_ID, sc.VERCEL_MODEL_PROVIDER,
    sc.VERCEL_RESPONSE_MODEL, sc.VERCEL_RESPONSE_ID, sc.VERCEL_RESPONSE_FINISH_REASON,
    # resource
    sc.SERVICE_NAME, sc.SERVICE_VERSION, sc.SERVICE_NAMESPACE, sc.SERVICE_INSTANCE_ID, sc.DEPLOYMENT_ENVIRONMENT,
    sc.DEPLOYMENT_ENVIRONMENT_NAME, sc.HOST_ARCH, sc.OS_TYPE,
})
STRUCTURAL_PREFIXES = (sc.USAGE_PREFIX, sc.OPENLLMETRY_USAGE_PREFIX, sc.OPENINFERENCE_TOKEN_COUNT_PREFIX,
                       sc.VERCEL_USAGE_PREFIX, sc.TELEMETRY_SDK_PREFIX, sc.TELEMETRY_AUTO_PREFIX,
                       sc.PROCESS_RUNTIME_PREFIX)
_SMALL_INT = range(-999_999, 1_000_000)  # shorter than any number a detector looks at


_MAX_TOKEN = 128


_STRUCTURAL_SEEN: dict[str, bool] = {}  # attribute keys repeat on every span: decide each once


def is_structural(key: str) -> bool:
    known = _STRUCTURAL_SEEN.get(key)
    if known is None:
        known = key in STRUCTURAL_KEYS or key.startswith(STRUCTURAL_PREFIXES)
        if len(_STRUCTURAL_SEEN) < 8192:
            _STRUCTURAL_SEEN[key] = known
    return known


def _token_shaped(value: str) -> bool:
    """What a structural value looks like (`gpt-4o-mini`, `chatcmpl-…`, `stop`): short, one word, no `@`.
    A structural key holding anything else (a sentence, an address, a card number) is redacted anyway."""
    return len(value) <= _MAX_TOKEN and value.isprintable() and " " not in value and "@" not in value


# The same tests compiled (verdict/redact/_gate.c, optional; tests/collector/test_redaction_gate.py
# checks they agree with the Python): every span calls `structural` ~8 times and `attributes` over
# ~15 attributes, ≈ 3k and 30k instructions a span in Python.
_content_keys: Callable[[dict, dict, int], list[str] | None] | None
_structural: Callable[[Callable[[Any], Any], int, Any], Any] | None
token_shaped: Callable[[str], bool]
try:
    from verdict.redact import _gate
except ImportError:
    _content_keys, _structural, token_shaped = None, None, _token_shaped
else:
    _content_keys, _structural = _gate.content_keys, _gate.structural
    token_shaped = functools.partial(_gate.token_shaped, _MAX_TOKEN)


def redaction_version() -> str:
    """The engine version an SDK must claim to be trusted: the `verdict` package version it ships in."""
    from verdict import __version__

    return __version__


def _identity(value):
    return value


@dataclass(frozen=True)
class ServerRedaction:
    mode: str
    content: Callable[[str], str]  # applied to message-content strings
    value: Callable[[Any], Any]  # any decoded value (strings, numbers, nested lists and maps), same shape back
    trust_sdk: bool = False  # skip `content` for authenticated spans whose scope claims `version`
    version: str = ""

    def __post_init__(self) -> None:
        if _structural is not None and self.mode == "content":
            # `structural` compiled: an instance attribute comes before the method (the reference).
            object.__setattr__(self, "structural", functools.partial(_structural, self.value, _MAX_TOKEN))

    def attributes(self, attrs: dict) -> dict:
        """A decoded attribute map with every non-structural value redacted (in place; returned).

        The values to redact go through the redactor as one map, so credential-named keys
        (`db.password`, `http.request.header.authorization`) are redacted whatever their value.
        """
        if self.mode == "off":
            return attrs
        keys = _content_keys(attrs, _STRUCTURAL_SEEN, _MAX_TOKEN) if _content_keys and self.mode == "content" else None
        if keys is None:
            content = self._content(attrs)
        elif keys:
            content = {key: attrs[key] for key in keys}
        else:
            return attrs  # the common span: nothing but structural values and small numbers
        if content:
            for key in content:
                del attrs[key]
            attrs.update(self.value(content))
        return attrs

    def _content(self, attrs: dict) -> dict:
        """The attributes `attributes` redacts (the reference for verdict/redact/_gate.c's `content_keys`)."""
        everything = self.mode == "all"
        seen = _STRUCTURAL_SEEN
        content = {}
        for key, v in attrs.items():
            t = type(v)
            if t is str:  # the common case first, token_shaped inlined: this runs for every attribute
                if not everything and (seen.get(key) or is_structural(key)) and len(v) <= _MAX_TOKEN and (
                        " " not in v and "@" not in v and v.isprintable()):
                    continue
            elif t is bool or t is float or v is None or (t is int and v in _SMALL_INT) or (
                    not everything and is_structural(key)
                    and (t is int or (t is list and all(type(x) is str and _token_shaped(x) for x in v)))):
                continue
            content[key] = v
        return content

    def structural(self, value: str | None) -> str | None:
        """A first-class column copied from a structural attribute: as sent when token-shaped, else redacted."""
        if value is None or self.mode == "off" or (self.mode == "content" and token_shaped(value)):
            return value
        return cast(str, self.value(value))  # a redacted string is a string

    @classmethod
    def create(cls, mode: str, trust_sdk: str = "authenticated") -> ServerRedaction:
        if mode not in MODES:
            raise ValueError(f"redaction mode must be one of {', '.join(MODES)}, got {mode!r}")
        if trust_sdk not in TRUST_MODES:
            raise ValueError(f"SDK redaction trust must be one of {', '.join(TRUST_MODES)}, got {trust_sdk!r}")
        if mode == "off":
            return cls(mode, _identity, _identity)
        try:
            from verdict.redact import Redactor
        except ImportError as exc:  # the engine ships with verdict; a broken install must not run open
            raise RuntimeError(
                f"server-side redaction needs verdict.redact ({exc}); fix the install or pass --redact off"
            ) from None
        redactor = Redactor()
        # System instructions (and retried payloads) repeat verbatim: remember recent results.
        content = functools.lru_cache(maxsize=CONTENT_CACHE_ENTRIES)(redactor.text)
        return cls(mode, content, redactor.value, trust_sdk == "authenticated", redaction_version())

    def content_for_scope(self, scope_attributes, authenticated: bool) -> Callable[[str], str]:
        """The content redactor for one scope's spans: identity when the sender is a trusted SDK."""
        if not (self.trust_sdk and authenticated):
            return self.content
        for key, value in scope_attributes:  # (key, value) pairs as sent (collector.spandata.ScopeData)
            if key == SDK_REDACTION_ATTRIBUTE:
                return _identity if value == self.version else self.content
        return self.content
