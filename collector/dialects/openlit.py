"""OpenLIT (`openlit.init()`): semconv attributes, but message content in OpenLIT's own text form where its
instrumentation has not moved to the semconv JSON yet (Together, Mistral, Cohere, … in 1.45; every provider
in older releases): `gen_ai.input.messages` (or a `gen_ai.content.prompt` span event's `gen_ai.prompt`) holds
`role: content` lines, `gen_ai.output.messages` (or `gen_ai.content.completion`'s `gen_ai.completion`) the
completion's plain text. This mapper reads that text into semconv messages; JSON content is the standard layer's.
"""

from __future__ import annotations

import re

from collector.dialects.common import EMPTY, GenAIFields, split_system, text_parts
from collector.dialects.vocabulary import ROLE_ALIASES, ROLES
from verdict.semconv import OPENLIT_SCOPE_PREFIX, OPENLIT_SDK_NAME, TELEMETRY_SDK_NAME

# A line that opens a message: `role: content` (OpenLIT's format_content joins messages with newlines).
_OPENS = re.compile("^({}): ?".format("|".join(sorted({*ROLES, *ROLE_ALIASES}))))


def recognises(scope_name: str, attrs: dict) -> bool:
    return scope_name.startswith(OPENLIT_SCOPE_PREFIX) or attrs.get(TELEMETRY_SDK_NAME) == OPENLIT_SDK_NAME


def is_text(value) -> bool:
    """A message value in OpenLIT's text form (not a semconv JSON array)."""
    return type(value) is str and value.lstrip()[:1] not in ("[", "")


def prompt_messages(text: str) -> list[dict]:
    """`system: …\\nuser: …` -> messages; a line without a role continues the message before it."""
    messages: list[dict] = []
    for line in text.split("\n"):
        opens = _OPENS.match(line)
        if opens:
            messages.append({"role": opens.group(1), "content": line[opens.end():]})
        elif messages:
            messages[-1]["content"] += "\n" + line
        else:
            messages.append({"role": "user", "content": line})
    return [{"role": m["role"], "parts": text_parts(m["content"])} for m in messages]


def completion_messages(text: str, finish_reasons) -> list[dict]:
    message: dict = {"role": "assistant", "parts": [{"type": "text", "content": text}]}
    if finish_reasons:
        message["finish_reason"] = finish_reasons[0]
    return [message]


def map_span(scope_name: str, name: str, attrs: dict, base: GenAIFields) -> GenAIFields:
    system = inputs = outputs = None
    if is_text(base.input_messages):
        system, inputs = split_system(prompt_messages(base.input_messages))  # type: ignore[arg-type]
    if is_text(base.output_messages):
        outputs = completion_messages(base.output_messages, base.finish_reasons)  # type: ignore[arg-type]
    if inputs is None and outputs is None and system is None:
        return EMPTY
    return EMPTY._replace(input_messages=inputs, output_messages=outputs, system_instructions=system)
