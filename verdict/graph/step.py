"""One node for one sample: render, call, extract, process, propagate, retry — or an error state.

An attempt fails when the extractor cannot turn the reply into the ResponseSchema, or when `unit.process`
(or `.propagate`) rejects it with ExtractionError: both are retried the same way, with the rejected reply
and the reason appended to the prompt (`repair_prompt`), so that a retry can change the outcome. Each step reports the
attempt that produced its result (0 when no model was called)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from verdict.extract import ExtractionJob
from verdict.graph.build import Node
from verdict.graph.errors import ConfigurationError, ExtractionError, TemplateError, UnitError
from verdict.graph.schema import Schema
from verdict.graph.template import AttributeView, PreviousView, mapping_of
from verdict.models.base import Message, ModelError, Usage

_NO_USAGE = Usage()
Result = BaseModel | UnitError


def run_step(node: Node, source: Any, outputs: list[Result]) -> tuple[Result, Usage, int]:
    """(result, usage, attempt). Never raises: any failure becomes a UnitError saying why."""
    for dep_path, output in zip(node.dep_paths, outputs, strict=True):
        if isinstance(output, UnitError):
            return UnitError("upstream", f"{dep_path} failed ({output})"), _NO_USAGE, 0
    previous = PreviousView(node.dep_names, outputs)
    try:
        input = _input(node, source, cast(list[BaseModel], outputs))  # failed ones returned above
    except (ValidationError, ConfigurationError) as exc:
        return UnitError("unit", f"cannot build the input: {_short(exc)}"), _NO_USAGE, 0
    if node.kind == "io":
        return _call_model(node, source, previous, input)
    try:
        return _finish(node, node.unit.compute(input, previous), previous, input), _NO_USAGE, 0
    except Exception as exc:  # a user's map function or pool over bad values; the row says why
        return UnitError("unit", _short(exc)), _NO_USAGE, 0


def _call_model(node: Node, source: Any, previous: PreviousView, input: Any) -> tuple[Result, Usage, int]:
    try:
        messages = node.template.render(  # type: ignore[union-attr]  # an io node has a template (build)
            {"source": source, "previous": previous, "input": input, "unit": node.unit})
    except TemplateError as exc:
        return UnitError("template", str(exc)), _NO_USAGE, 0
    usage = _NO_USAGE
    failure: UnitError | None = UnitError("extraction", "no attempt was made")
    prompt = messages
    for attempt in range(1, node.retries + 2):
        job = ExtractionJob(node.model, prompt, node.params, node.response_schema)  # type: ignore[arg-type]  # and a model and schema (build)
        retry = True
        try:
            response = node.extractor.extract(job)  # type: ignore[union-attr]  # and an extractor (build)
        except ExtractionError as exc:
            failure = UnitError("extraction", str(exc), attempt, job.reply)
        except ModelError as exc:
            # The client's retry policy is the only one for a model call (its message states the requests it
            # sent); the engine retries only replies it could not use.
            failure, retry = UnitError("model", str(exc), attempt), False
        else:
            failure = None
        usage = usage + job.usage  # every attempt is paid for, failed or not
        if failure is None:
            try:
                return _finish(node, node.unit.process(input, response), previous, input), usage, attempt
            except ExtractionError as exc:  # the unit rejected the reply (e.g. against its input): retry
                failure = UnitError("extraction", str(exc), attempt, job.reply)
            except Exception as exc:  # user code in process/propagate
                return UnitError("unit", _short(exc), attempt), usage, attempt
        if not retry:
            break
        if failure.kind == "extraction":
            prompt = repair_prompt(messages, job.reply, failure.message)
    failed = cast(UnitError, failure)  # the loop ends only after a failed attempt
    return failed, usage, failed.attempts


MAX_REPAIR_REPLY = 2000  # characters
REPAIR = ("Your previous reply could not be used: {reason}. Reply again to the request above, following its "
          "instructions exactly.")


def repair_prompt(messages: tuple[Message, ...], reply: str | None, reason: str) -> tuple[Message, ...]:
    """The original messages, the unusable reply and why it was unusable: the same prompt at a low temperature
    mostly gets the same reply again, a named reason often gets a usable one."""
    # A long reply (typically a truncated one) is left out: it would crowd the context for little help.
    turn = (Message("assistant", reply),) if reply and len(reply) <= MAX_REPAIR_REPLY else ()
    return (*messages, *turn, Message("user", REPAIR.format(reason=reason)))


def _finish(node: Node, output: Any, previous: PreviousView, input: Any) -> BaseModel:
    if node.unit.propagate_fn is not None:
        output = node.unit.propagate_fn(node.unit, previous, input, output)
    if not isinstance(output, BaseModel):
        raise TypeError(f"{node.path} produced {type(output).__name__}, not a Schema")
    return output


def _input(node: Node, source: Any, outputs: list[BaseModel]) -> Any:
    schema = node.unit.InputSchema
    if not outputs:
        if schema is None:
            return source
        data = mapping_of(source) if isinstance(source, AttributeView) else source
        return schema.model_validate(data.model_dump() if isinstance(data, BaseModel) else data)
    if schema is None and len(outputs) == 1:
        return outputs[0]
    fields: dict[str, Any] = {}
    for output in reversed(outputs):  # the first dependency wins a name clash
        fields.update(_fields(output))
    if schema is None:
        return Schema.model_construct(**fields)
    if node.cast is None:  # an upstream output schema was only known at run time
        from verdict.graph.casting import plan_cast

        merged: dict[str, Any] = {}
        for output in outputs:
            for name, info in type(output).model_fields.items():
                merged.setdefault(name, info)
        return plan_cast(merged, "+".join(type(o).__name__ for o in outputs), schema).apply(fields)
    return node.cast.apply(fields)


def _fields(output: Any) -> Mapping[str, Any]:
    extra = output.__pydantic_extra__
    return {**output.__dict__, **extra} if extra else output.__dict__


def _short(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
    return f"{type(exc).__name__}: {exc}"
