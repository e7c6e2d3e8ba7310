"""Extractors: how a unit turns model replies into its ResponseSchema.

An extractor makes the model call(s) for one attempt and returns a validated Schema, or raises
ExtractionError; the unit retries that and records an error state after its last retry. A truncated reply
is never extracted, except by an extractor that reads only its first tokens. Configuration mistakes (a
token-probability extractor on a free-text field, on a model without logprobs, ...) raise
ConfigurationError when the pipeline is built.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Annotated, Any, TypeVar

from pydantic import Field, TypeAdapter, ValidationError, create_model

from verdict.graph.errors import ConfigurationError, ExtractionError
from verdict.graph.schema import Schema, describe
from verdict.graph.via import resolve_model
from verdict.models.base import (
    Message,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    Usage,
    with_schema_instruction,
)
from verdict.scale import BooleanScale, DiscreteScale, Scale, scale_of

S = TypeVar("S", bound=Schema)


@dataclass(slots=True)
class ExtractionJob:
    """One attempt of one unit: the rendered messages, the model and its params; sums usage."""

    model: Model
    messages: tuple[Message, ...]
    params: Mapping[str, Any]
    schema: type[Schema]
    usage: Usage = field(default_factory=Usage)
    reply: str | None = None  # the text of the last reply, for a repair prompt when it cannot be used

    def complete(self, *, json_schema: Mapping[str, Any] | None = None, top_logprobs: int | None = None,
                 messages: tuple[Message, ...] | None = None, model: Model | None = None,
                 allow_truncated: bool = False) -> ModelResponse:
        """One model call. A truncated reply is an ExtractionError unless the extractor reads only a prefix
        of it (`allow_truncated`)."""
        request = ModelRequest(messages or self.messages, self.params, json_schema, top_logprobs)
        try:
            response = (model or self.model).complete(request)
        except ModelError as exc:  # a failed call is paid in requests too (budgets count them)
            self.usage = self.usage + Usage(requests=1 if exc.requests is None else exc.requests)
            raise
        counted = response.usage.requests or (0 if response.cached else 1)
        self.usage = self.usage + replace(response.usage, requests=counted)
        self.reply = response.text
        if response.truncated and not allow_truncated:
            raise ExtractionError(f"the reply was truncated (finish_reason={response.finish_reason})")
        return response


class Extractor:
    def output_schema(self, schema: type[Schema]) -> type[Schema]:
        """The schema of what this extractor returns for a unit with ResponseSchema `schema`."""
        return schema

    def check(self, schema: type[Schema], model: Model) -> None:
        """Raise ConfigurationError if this extractor cannot serve `schema` on `model`."""

    def extract(self, job: ExtractionJob) -> Schema:
        raise NotImplementedError


class StructuredExtractor(Extractor):
    """JSON validated against the ResponseSchema. Sends the schema so the client can use the provider's
    JSON-schema mode; a model without one also gets the schema spelled out after the prompt."""

    def extract(self, job: ExtractionJob) -> Schema:
        schema = json_schema(job.schema)
        messages = job.messages
        if not job.model.supports_json_schema:
            messages = with_schema_instruction(messages, schema)
        response = job.complete(json_schema=schema, messages=messages)
        return parse_json(job.schema, response.text)


class RegexExtractor(Extractor):
    """Fields read by regular expressions (group 1 if the pattern has groups, else the whole match).

    The grammar (docs/engine.md, "Reading rules"): every match of a field's pattern is a candidate; a
    candidate that is not a valid value of the field (off the scale, out of range) is not one. The reply must
    hold exactly one distinct candidate per field: several different ones ("On a scale of 1 to 5 ... 4"
    without the restatement rule, "3-4", "between 3 and 4", "4, maybe 5") are ambiguous, and a candidate
    negated in its clause ("not a 5", "wouldn't give it 4") makes the reply unreadable: both are
    ExtractionErrors (retried), never the first number. On a numeric DiscreteScale, restatements of the
    scale itself are not candidates: "1 to 5" / "1-5" (its two ends) and the denominator of "4/5" or
    "4 out of 5".
    """

    # A whole number: not the digits of a word, of a decimal or of "1,000", and "3-4" is 3 and 4, not -4.
    FIRST_INT = r"(?<![\w.,])-?\d+(?![.,]?\d)"
    FIRST_FLOAT = r"(?<![\w.,])-?\d+(?:\.\d+)?(?![.,]?\d)"

    def __init__(self, pattern: str | Mapping[str, str] = FIRST_INT) -> None:
        self.patterns = pattern
        self._compiled: dict[str | None, re.Pattern[str]] = (
            {None: re.compile(pattern)} if isinstance(pattern, str)
            else {name: re.compile(p) for name, p in pattern.items()}
        )

    def _targets(self, schema: type[Schema]) -> dict[str, re.Pattern[str]]:
        if None in self._compiled:
            return {_single_field(schema, "RegexExtractor with one pattern"): self._compiled[None]}
        return self._compiled  # type: ignore[return-value]  # no None key left: each pattern names its field

    def check(self, schema: type[Schema], model: Model) -> None:
        targets = self._targets(schema)
        missing = [n for n, f in schema.model_fields.items() if f.is_required() and n not in targets]
        unknown = [n for n in targets if n not in schema.model_fields]
        if missing or unknown:
            raise ConfigurationError(f"RegexExtractor patterns do not match {describe(schema)}: "
                                     f"missing {missing or 'none'}, unknown {unknown or 'none'}")

    def extract(self, job: ExtractionJob) -> Schema:
        text = job.complete().text
        values = {name: read_field(job.schema, name, pattern, text)
                  for name, pattern in self._targets(job.schema).items()}
        return _validate(job.schema, values)


# A negation in the same clause, at most six words before a number, makes the number unreadable.
_NEGATION = re.compile(r"\b(?:not|no|never|nor|neither|without|cannot)\b|n't\b", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r"[.;:,!?\n]|\bbut\b", re.IGNORECASE)
_NEGATION_WORDS = 6


def _negated(text: str, start: int) -> bool:
    before = _CLAUSE_BREAK.split(text[:start])[-1]
    return _NEGATION.search(" ".join(before.split()[-_NEGATION_WORDS:])) is not None


def _without_scale_restatements(text: str, scale: DiscreteScale) -> str:
    """The text with "1 to 5", "1-5" and the "/5" of "4/5" or "out of 5" blanked (same length, so match
    positions hold): they name the scale, not a score."""
    low, high = (re.escape(str(v)) for v in (min(scale.values), max(scale.values)))
    patterns = (rf"(?<![\w.]){low}\s*(?:-|–|to)\s*{high}(?!\w|\.\d)", rf"(?:/|\bout of)\s*{high}(?!\w|\.\d)")
    for pattern in patterns:
        text = re.sub(pattern, lambda m: " " * len(m.group(0)), text, flags=re.IGNORECASE)
    return text


def read_field(schema: type[Schema], name: str, pattern: re.Pattern[str], text: str) -> Any:
    """The one value `pattern` finds for field `name` in `text` (RegexExtractor's grammar); ExtractionError
    saying why there is none."""
    info = schema.model_fields[name]
    scale = scale_of(info)
    if isinstance(scale, DiscreteScale) and scale.numeric:
        text = _without_scale_restatements(text, scale)
    matches = list(pattern.finditer(text))
    if not matches:
        raise ExtractionError(f"no match for {pattern.pattern!r} ({name}) in the reply")
    found: dict[str, Any] = {}  # the valid values by their text, in reply order
    negated: list[str] = []
    for match in matches:
        captured = match.group(1) if pattern.groups else match.group(0)
        value = _field_value(scale, info, captured)
        if value is _INVALID:
            continue
        if _negated(text, match.start()):
            negated.append(captured)
        found.setdefault(str(value), value)
    if negated:
        raise ExtractionError(f"the reply negates {', '.join(dict.fromkeys(negated))} ({name}): say the "
                              "value itself")
    if len(found) > 1:
        raise ExtractionError(f"ambiguous: the reply holds several values for {name} ({', '.join(found)}); "
                              "give exactly one")
    if not found:
        shown = ", ".join(dict.fromkeys(repr(m.group(1) if pattern.groups else m.group(0)) for m in matches))
        where = f"on the scale ({scale.instruction})" if scale is not None else f"a valid {name}"
        raise ExtractionError(f"{shown} is not {where}")
    return next(iter(found.values()))


_INVALID = object()


def _field_value(scale: Scale | None, info: Any, captured: str) -> Any:
    """`captured` as a value of the field, or _INVALID."""
    if isinstance(scale, DiscreteScale | BooleanScale):
        value = scale.value_of_token(captured)
        return _INVALID if value is None else value
    try:
        return _field_adapter(info.annotation, tuple(info.metadata)).validate_python(captured)
    except ValidationError:
        return _INVALID


@lru_cache(maxsize=256)
def _field_adapter(annotation: Any, metadata: tuple[Any, ...]) -> TypeAdapter[Any]:
    """A validator for one schema field: its type and its constraints."""
    return TypeAdapter(Annotated[annotation, *metadata] if metadata else annotation)


class RawTextExtractor(Extractor):
    """The whole reply text as the schema's single text field."""

    def check(self, schema: type[Schema], model: Model) -> None:
        name = _single_field(schema, "RawTextExtractor")
        if schema.model_fields[name].annotation is not str:
            raise ConfigurationError(f"RawTextExtractor needs a str field; {describe(schema)} has none")

    def extract(self, job: ExtractionJob) -> Schema:
        return _validate(job.schema, {_single_field(job.schema, "RawTextExtractor"): job.complete().text})


class TokenProbabilityExtractor(Extractor):
    """The probability of each scale value from the logprobs of the reply's answer token.

    The answer token is the reply's first non-blank token (a verdict-first or constrained reply: "4",
    or "4" then a new line and an explanation), or, with `marker="Score:"`, the first token after the
    marker's first occurrence. Anything else is an ExtractionError, never a score: a first token that is
    not a scale value ("1. This sentence…", "(1/2)", "top_50"), a value the following tokens extend
    ("12" on 1–5 is off the scale, not 1), a verdict-first reply that goes on on the same line.
    The reply may be cut by max_tokens (max_tokens=1 is the natural setting) once the answer is in.

    The field gets the most likely value (argmax); the full distribution is appended as
    `<field>_distribution` ({value: probability}, normalised over the scale's tokens).
    """

    def __init__(self, field: str | None = None, top_logprobs: int = 20, marker: str | None = None) -> None:
        if marker is not None and not marker.strip():
            raise ConfigurationError("TokenProbabilityExtractor marker must be non-blank text such as 'Score:'")
        self.field = field
        self.top_logprobs = top_logprobs
        self.marker = marker
        # schema -> (field, scale, output schema), resolved once: pydantic's model_fields is slow per call.
        self._resolved: dict[type[Schema], tuple[str, DiscreteScale | BooleanScale, type[Schema]]] = {}

    def _target(self, schema: type[Schema]) -> tuple[str, DiscreteScale | BooleanScale, type[Schema]]:
        resolved = self._resolved.get(schema)
        if resolved is None:
            name, scale = self._field(schema)
            resolved = self._resolved[schema] = (name, scale, self.output_schema(schema))
        return resolved

    def _field(self, schema: type[Schema]) -> tuple[str, DiscreteScale | BooleanScale]:
        name = self.field or _single_field(schema, type(self).__name__)
        scale = scale_of(schema.model_fields[name]) if name in schema.model_fields else None
        if not isinstance(scale, DiscreteScale | BooleanScale):
            raise ConfigurationError(f"{type(self).__name__} needs a DiscreteScale or BooleanScale field; "
                                     f"{name!r} of {describe(schema)} is not one")
        return name, scale

    def check(self, schema: type[Schema], model: Model) -> None:
        name, _ = self._field(schema)
        others = [n for n, f in schema.model_fields.items() if f.is_required() and n != name]
        if others:
            raise ConfigurationError(f"{type(self).__name__} fills only {name!r}; {describe(schema)} also "
                                     f"requires {others}")
        if not model.supports_logprobs:
            raise ConfigurationError(f"{type(self).__name__} needs logprobs, which {model.name} does not return")

    def output_schema(self, schema: type[Schema]) -> type[Schema]:
        name, _ = self._field(schema)
        return _with_distribution(schema, name, None)

    def answer_position(self, tokens: list[str]) -> int:
        """Index of the answer token: the first non-blank one, after the marker when there is one."""
        start = 0
        if self.marker is not None:
            text = "".join(tokens)
            found = text.lower().find(self.marker.lower())
            if found < 0:
                raise ExtractionError(f"the reply has no {self.marker!r} marker before its answer")
            end, offset, start = found + len(self.marker), 0, len(tokens)
            for index, token in enumerate(tokens):
                if offset >= end:
                    start = index
                    break
                if offset + len(token) > end and token[end - offset:].strip():
                    raise ExtractionError(f"the answer after {self.marker!r} shares a token with it ({token!r})")
                offset += len(token)
        for index in range(start, len(tokens)):
            if tokens[index].strip():
                return index
        raise ExtractionError("the reply ends before its answer" if tokens else "the reply is empty")

    def distribution(self, scale: DiscreteScale | BooleanScale, response: ModelResponse) -> dict[Any, float]:
        if not response.logprobs:
            raise ExtractionError("the reply carries no logprobs")
        tokens = [position.token for position in response.logprobs]
        index = self.answer_position(tokens)
        position = response.logprobs[index]
        if scale.value_of_token(position.token) is None:
            raise ExtractionError(f"the reply's answer starts with {position.token.strip()!r}, which is not on the "
                                  f"scale ({scale.instruction})")
        rest = "".join(tokens[index + 1:])
        word = (position.token.strip() + rest).split(maxsplit=1)[0].rstrip(_CLOSING_PUNCTUATION)
        if word.lower() != position.token.strip().lower():
            raise ExtractionError(f"the reply's answer {word[:40]!r} is not on the scale ({scale.instruction})")
        if self.marker is None:
            line = rest.split("\n", 1)[0].strip().lstrip(_CLOSING_PUNCTUATION).strip()
            if line:
                raise ExtractionError(f"the reply goes on after {word!r} on the same line ({line[:40]!r}): a score "
                                      "must be the reply's first word or follow the marker")
        # The chosen token is usually among the alternatives too; a dict counts it once.
        candidates = dict(position.top)
        candidates.setdefault(position.token, position.logprob)
        mass: dict[Any, float] = {}
        for token, logprob in candidates.items():
            value = scale.value_of_token(token)
            if value is not None:
                mass[value] = mass.get(value, 0.0) + math.exp(logprob)
        total = sum(mass.values())
        return {v: mass.get(v, 0.0) / total for v in _scale_values(scale) if v in mass}

    def reduce(self, scale: DiscreteScale | BooleanScale, distribution: dict[Any, float]) -> Any:
        return max(distribution, key=distribution.__getitem__)

    def extract(self, job: ExtractionJob) -> Schema:
        name, scale, output = self._target(job.schema)
        # Only the answer token is read, so a reply cut by max_tokens after it is complete enough.
        response = job.complete(top_logprobs=self.top_logprobs, allow_truncated=True)
        dist = self.distribution(scale, response)
        return _validate(output, {name: self.reduce(scale, dist), f"{name}_distribution": dist})


# What may close a scale word ("4.", "yes,"): anything else attached to it makes another word ("12", "4/5").
_CLOSING_PUNCTUATION = ".,;:!)"


class ExpectedValueExtractor(TokenProbabilityExtractor):
    """Like TokenProbabilityExtractor, but the field is the probability-weighted mean (a float)."""

    def _field(self, schema: type[Schema]) -> tuple[str, DiscreteScale | BooleanScale]:
        name, scale = super()._field(schema)
        if not (isinstance(scale, DiscreteScale) and scale.numeric):
            raise ConfigurationError(f"ExpectedValueExtractor needs a numeric DiscreteScale; {name!r} is {scale!r}")
        return name, scale

    def output_schema(self, schema: type[Schema]) -> type[Schema]:
        name, scale = self._field(schema)
        return _with_distribution(schema, name, scale)

    def reduce(self, scale: DiscreteScale | BooleanScale, distribution: dict[Any, float]) -> float:
        return float(sum(v * p for v, p in distribution.items()))


class PostHocExtractor(Extractor):
    """Two steps: the model answers freely, then a second call turns that reply into the schema as JSON."""

    INSTRUCTION = ("Extract the requested fields from the text below. Reply with a JSON object that "
                   "follows this schema:\n{schema}")

    def __init__(self, model: str | Model | None = None) -> None:
        self.model_spec = model
        self._model: Model | None = None

    def check(self, schema: type[Schema], model: Model) -> None:
        if self.model_spec is not None and self._model is None:
            self._model = resolve_model(self.model_spec)

    def extract(self, job: ExtractionJob) -> Schema:
        reply = job.complete().text
        schema = json_schema(job.schema)
        messages = (Message("system", self.INSTRUCTION.format(schema=json.dumps(schema))), Message("user", reply))
        response = job.complete(json_schema=schema, messages=messages, model=self._model)
        return parse_json(job.schema, response.text)


def default_extractor(schema: type[Schema], model: Model) -> Extractor:
    """Token probabilities for a lone DiscreteScale/BooleanScale field when the model returns logprobs;
    structured output (which enforces every field's range) otherwise."""
    required = [f for f in schema.model_fields.values() if f.is_required()]
    if len(required) == 1 and isinstance(scale_of(required[0]), DiscreteScale | BooleanScale) \
            and model.supports_logprobs:
        return TokenProbabilityExtractor()
    return StructuredExtractor()


@lru_cache(maxsize=512)
def json_schema(schema: type[Schema]) -> dict[str, Any]:
    return schema.model_json_schema()


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_json(schema: type[S], text: str) -> S:
    """The reply's JSON (the whole reply, a fenced block, or the object inside prose) validated against
    `schema`. A key repeated in one object (`{"verdict": "PASS", "verdict": "FAIL"}`) states two values: an
    ExtractionError, never the last one."""
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    try:
        return _unique_keys(schema.model_validate_json(body), body)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid":
            raise ExtractionError(_validation_summary(exc)) from None
    start, end = body.find("{"), body.rfind("}")
    if start == -1 or end <= start:
        raise ExtractionError("the reply holds no JSON object")
    try:
        return _unique_keys(schema.model_validate_json(body[start : end + 1]), body[start : end + 1])
    except ValidationError as exc:
        raise ExtractionError(_validation_summary(exc)) from None


def _unique_keys(parsed: S, body: str) -> S:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        if repeated:
            raise ExtractionError(f"the reply repeats the key(s) {repeated} in one object")
        return dict(items)

    # What pydantic's parser accepts and json's does not leaves nothing to compare.
    with contextlib.suppress(json.JSONDecodeError):
        json.loads(body, object_pairs_hook=pairs)
    return parsed


def _validate(schema: type[Schema], values: dict[str, Any]) -> Schema:
    try:
        return schema.model_validate(values)
    except ValidationError as exc:
        raise ExtractionError(_validation_summary(exc)) from None


def _validation_summary(exc: ValidationError) -> str:
    parts = [f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in exc.errors()[:3]]
    return "the reply does not validate: " + "; ".join(parts)


def _single_field(schema: type[Schema], who: str) -> str:
    required = [n for n, f in schema.model_fields.items() if f.is_required()]
    if len(required) != 1:
        raise ConfigurationError(f"{who} fills exactly one field, but {describe(schema)} requires {required}")
    return required[0]


def _scale_values(scale: Scale) -> tuple[Any, ...]:
    return scale.values if isinstance(scale, DiscreteScale) else (False, True)


@lru_cache(maxsize=256)
def _with_distribution(schema: type[Schema], name: str, expected: DiscreteScale | None) -> type[Schema]:
    fields: dict[str, Any] = {f"{name}_distribution": (dict[Any, float], ...)}
    if expected is not None:
        low, high = min(expected.values), max(expected.values)
        fields[name] = (Annotated[float, Field(ge=low, le=high)], ...)
    return create_model(schema.__name__, __base__=schema, **fields)
