"""Materialisation: from units and containers to an immutable, topologically ordered Graph.

Everything that can be wrong with a graph is found here, before any sample runs: missing models or
prompts, impossible name-casts (naming both schemas), extractors that cannot serve a field, pinned units
that read `source`, cycles. The Graph is shared read-only by every sample; per-sample state is just
a result list and a pending-count list (see executor.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from verdict.graph.casting import CastPlan, plan_cast
from verdict.graph.compose import Container
from verdict.graph.errors import ConfigurationError
from verdict.graph.schema import Schema, describe
from verdict.graph.template import CompiledTemplate, compile_template
from verdict.graph.unit import Unit
from verdict.graph.via import Via
from verdict.models.base import Model
from verdict.models.provider import CACHE_SALT, ProviderModel

if TYPE_CHECKING:
    from verdict.extract import Extractor


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    index: int
    path: str
    unit: Unit
    kind: str
    deps: tuple[int, ...]
    dependents: tuple[int, ...]
    dep_names: tuple[str, ...]
    dep_paths: tuple[str, ...]
    model: Model | None
    retries: int
    params: Mapping[str, Any]
    template: CompiledTemplate | None
    extractor: Extractor | None
    response_schema: type[Schema] | None
    output_schema: type[Schema] | None
    # How the dependencies' outputs become the unit's InputSchema (None: no InputSchema, or decided at run time).
    cast: CastPlan | None


@dataclass(frozen=True, slots=True, eq=False)
class Graph:
    nodes: tuple[Node, ...]
    pinned: tuple[int, ...]
    # Nodes that can start as soon as a sample arrives, and the initial count of unfinished dependencies.
    starts: tuple[int, ...]
    pending: tuple[int, ...]
    by_path: Mapping[str, int]

    @property
    def sample_nodes(self) -> int:
        return len(self.nodes) - len(self.pinned)


def build(top: Container) -> Graph:
    units, paths, vias = _layout(top)
    order = _topological(units)
    index = {u: i for i, u in enumerate(order)}
    nodes: list[Node] = []
    for i, unit in enumerate(order):
        nodes.append(_node(i, unit, paths[unit], vias.get(unit), index, nodes))
    _check_pins(nodes)
    pinned = tuple(n.index for n in nodes if n.unit.pinned)
    pinned_set = set(pinned)
    pending = tuple(0 if n.index in pinned_set else sum(d not in pinned_set for d in n.deps) for n in nodes)
    starts = tuple(n.index for n in nodes if n.index not in pinned_set and pending[n.index] == 0)
    return Graph(tuple(nodes), pinned, starts, pending, {n.path: n.index for n in nodes})


def _layout(top: Container) -> tuple[list[Unit], dict[Unit, str], dict[Unit, Via]]:
    """Units in definition order, their paths (container segments, `[i]` among same-named siblings)
    and the `.via()` each inherits from its nearest container."""
    paths: dict[Unit, str] = {}
    vias: dict[Unit, Via] = {}

    def walk(container: Container, prefix: str, inherited: Via | None) -> None:
        inherited = container.via_config or inherited
        segments = [m.name if isinstance(m, Unit) else m.segment for m in container.members]
        counts, seen = Counter(segments), Counter[str]()
        for member, segment in zip(container.members, segments, strict=True):
            label = f"{segment}[{seen[segment]}]" if counts[segment] > 1 else segment
            seen[segment] += 1
            path = f"{prefix}{label}"
            if isinstance(member, Unit):
                if member in paths:
                    raise ConfigurationError(f"unit {member.name!r} appears twice in the pipeline ({paths[member]} "
                                             f"and {path}); use a Layer or a fresh unit")
                paths[member] = path
                if inherited and member.via_config is None:
                    vias[member] = inherited
            else:
                walk(member, f"{path}.", inherited)

    walk(top, "", None)
    # Units reached only through `>>` edges made outside the containers join at the top level.
    frontier, units = list(paths), list(paths)
    while frontier:
        unit = frontier.pop()
        for other in (*unit.dependencies, *unit.dependents):
            if other not in paths:
                path, k = other.name, 1
                while path in paths.values():
                    path, k = f"{other.name}[{k}]", k + 1
                paths[other] = path
                if top.via_config and other.via_config is None:
                    vias[other] = top.via_config
                units.append(other)
                frontier.append(other)
    return units, paths, vias


def _topological(units: list[Unit]) -> list[Unit]:
    position = {u: i for i, u in enumerate(units)}
    waiting = {u: len(u.dependencies) for u in units}
    ready = [u for u in units if waiting[u] == 0]
    order: list[Unit] = []
    while ready:
        ready.sort(key=position.__getitem__, reverse=True)
        unit = ready.pop()
        order.append(unit)
        for dependent in unit.dependents:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    if len(order) != len(units):
        stuck = ", ".join(u.name for u in units if waiting[u] > 0)
        raise ConfigurationError(f"the graph has a cycle through: {stuck}")
    return order


def _node(i: int, unit: Unit, path: str, inherited: Via | None, index: dict[Unit, int],
          built: list[Node]) -> Node:
    deps = tuple(index[d] for d in unit.dependencies)
    inputs = [built[d].output_schema for d in deps]
    model = template = extractor = response = None
    via = unit.via_config or inherited
    if unit.kind == "io":
        from verdict.extract import default_extractor

        if via is None:
            raise ConfigurationError(f"{path}: no model; call .via(...) on the unit or on a container holding it")
        model = via.model
        template = unit.template or _default_template(type(unit))  # type: ignore[arg-type]  # a class is hashable (mypy checks instances)
        if template is None:
            raise ConfigurationError(f"{path}: no prompt; call .prompt(...)")
        schema = unit.response_schema()
        extractor = unit.extractor or default_extractor(schema, model)
        try:
            extractor.check(schema, model)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{path}: {exc}") from None
        response = schema
        output = unit.output_schema(extractor.output_schema(schema), inputs)
    else:
        try:
            output = unit.output_schema(None, inputs)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{path}: {exc}") from None
    params = dict(via.params) if via else {}
    if extractor is not None and not {"max_tokens", "max_completion_tokens"} & set(params):
        params["max_tokens"] = default_output_budget(extractor)
    if isinstance(model, ProviderModel):
        # Salt the response cache with the unit's path: otherwise every member of a repeated Layer sends the
        # same request and, on a rerun, all would get the one cached reply instead of independent samples.
        params.setdefault(CACHE_SALT, path)
    return Node(
        index=i, path=path, unit=unit, kind=unit.kind, deps=deps,
        dependents=tuple(index[d] for d in unit.dependents if d in index),
        dep_names=tuple(d.name for d in unit.dependencies), dep_paths=tuple(built[d].path for d in deps),
        model=model, retries=via.retries if via else 0, params=params,
        template=template, extractor=extractor, response_schema=response, output_schema=output,
        cast=_cast(path, unit, inputs, [built[d].path for d in deps]),
    )


# The output budget (max_tokens) of a unit whose `.via(...)` sets none: without one a reply may run to the
# server's own limit, and the per-attempt timeout, which follows the budget (ProviderModel.attempt_timeout), has
# nothing to follow.
ANSWER_TOKEN_BUDGET = 8  # the answer token, and the next one that may extend it ("12" is not "1")
REPLY_BUDGET = 1024  # a structured or free-text reply


def default_output_budget(extractor: Extractor) -> int:
    from verdict.extract import TokenProbabilityExtractor

    if isinstance(extractor, TokenProbabilityExtractor) and extractor.marker is None:
        return ANSWER_TOKEN_BUDGET
    return REPLY_BUDGET


@cache
def _default_template(unit_type: type[Unit]) -> CompiledTemplate | None:
    return compile_template(unit_type.default_prompt) if unit_type.default_prompt else None


def _cast(path: str, unit: Unit, inputs: list[type[Schema] | None], dep_paths: list[str]) -> CastPlan | None:
    if unit.InputSchema is None or not inputs or any(s is None for s in inputs):
        return None
    fields: dict[str, Any] = {}
    for schema in inputs:
        for name, info in schema.model_fields.items():  # type: ignore[union-attr]  # None excluded above
            fields.setdefault(name, info)
    label = " + ".join(f"{p}:{describe(s)}" for p, s in zip(dep_paths, inputs, strict=True))  # type: ignore[arg-type]  # None excluded above
    try:
        return plan_cast(fields, label, unit.InputSchema)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None


def _check_pins(nodes: list[Node]) -> None:
    for node in nodes:
        if not node.unit.pinned:
            continue
        loose = [nodes[d].path for d in node.deps if not nodes[d].unit.pinned]
        if loose:
            raise ConfigurationError(f"{node.path} is pinned (runs once for all samples) but depends on "
                                     f"per-sample units: {', '.join(loose)}")
        # A root unit's `input` is the sample itself.
        per_sample = {"source"} if node.deps else {"source", "input"}
        read = sorted(per_sample & node.template.names) if node.template is not None else []
        if read:
            raise ConfigurationError(f"{node.path} is pinned (runs once for all samples) but its prompt "
                                     f"reads {{{read[-1]}...}}, which differs per sample")
