"""Composition: `>>` chains, Layers (ensembles) and Blocks, and how their members are linked.

`a >> b` links every leaf of `a` to the roots of `b` in the link mode of `a` (a Layer's `outer`;
dense otherwise) and appends the edges to the units themselves, so `>>` builds arbitrary DAGs. Containers
only remember membership, for unit paths and for `.via()` inheritance.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, Self, cast

from verdict.graph.errors import ConfigurationError
from verdict.graph.via import Via, make_via
from verdict.models.base import Model

if TYPE_CHECKING:
    from verdict.graph.unit import Unit

LinkMode = Literal["dense", "broadcast", "cumulative", "last"]


class Node:
    """What `>>` links: a Unit (verdict.graph.unit, built on this module) or a Container of them."""

    def __rshift__(self, other: Any) -> Block:
        return chain(cast("Unit | Container", self), other)  # a Node is one of the two


class Container(Node):
    """Members plus an optional name (a path segment) and a `.via()` its members inherit."""

    segment: str = "container"

    def __init__(self, members: list[Any], name: str | None = None) -> None:
        self.members: list[Unit | Container] = members
        self.name = name
        self.via_config: Via | None = None

    def via(self, model: str | Model | None = None, retries: int = 3, *, policy_or_name: str | Model | None = None,
            **params: Any) -> Self:
        """Model for every member that sets none itself."""
        self.via_config = make_via(model, policy_or_name, retries, params)
        return self

    def units(self) -> Iterator[Unit]:
        for member in self.members:
            if isinstance(member, Container):
                yield from member.units()
            else:
                yield member

    def outer_mode(self) -> LinkMode:
        return "dense"

    def roots(self) -> list[Unit]:
        raise NotImplementedError

    def leaves(self) -> list[Unit]:
        raise NotImplementedError

    def clone(self, mapping: dict[Unit, Unit]) -> Self:
        raise NotImplementedError


class Block(Container):
    """Members run one after another: each member's roots depend on the previous member's leaves.
    A named Block adds its name to the paths of its units."""

    @property
    def segment(self) -> str:  # type: ignore[override]  # read-only here: a Block's segment is its name
        return self.name or "block"

    def __rshift__(self, other: Any) -> Self:
        return cast(Self, chain(self, other))  # a Block on the left grows, keeping its type (chain)

    def __init__(self, name: str | None = None, members: list[Any] | None = None) -> None:
        super().__init__(members or [], name)

    def roots(self) -> list[Unit]:
        return self.members[0].roots() if self.members else []

    def leaves(self) -> list[Unit]:
        return self.members[-1].leaves() if self.members else []

    def outer_mode(self) -> LinkMode:
        return outer_mode(self.members[-1]) if self.members else "dense"

    def clone(self, mapping: dict[Unit, Unit]) -> Self:
        twin = type(self)(self.name, [m.clone(mapping) for m in self.members])
        twin.via_config = self.via_config
        _copy_internal_edges(self.units(), mapping)
        return twin


class Layer(Container):
    """An ensemble: `repeat` independent copies of the member(s); a list is unravelled.

    inner='chain' links each member to the next (the first receives the layer's input, every member is a
    leaf). outer decides how this layer's leaves feed what follows: 'dense' (all to all), 'broadcast'
    (i-th to i-th; sizes must match), 'cumulative' (the i-th root sees leaves 0..i) or 'last' (only the
    last leaf).
    """

    segment = "layer"

    def __init__(self, units: Any, repeat: int = 1, *, inner: Literal["none", "chain"] = "none",
                 outer: LinkMode = "dense", name: str | None = None) -> None:
        if repeat < 1:
            raise ConfigurationError(f"Layer repeat must be >= 1, got {repeat}")
        if inner not in ("none", "chain"):
            raise ConfigurationError(f"Layer inner must be 'none' or 'chain', got {inner!r}")
        if outer not in ("dense", "broadcast", "cumulative", "last"):
            raise ConfigurationError(f"Layer outer must be dense/broadcast/cumulative/last, got {outer!r}")
        template = _unravel(units)
        if not template:
            raise ConfigurationError("a Layer needs at least one unit")
        members = [m.clone({}) for _ in range(repeat) for m in template]
        super().__init__(members, name)
        if name:
            self.segment = name
        self.inner, self.outer = inner, outer
        if inner == "chain":
            for upstream, downstream in zip(members, members[1:], strict=False):
                link(upstream.leaves(), downstream.roots(), "dense")

    def roots(self) -> list[Unit]:
        if self.inner == "chain":
            return self.members[0].roots()
        return [u for m in self.members for u in m.roots()]

    def leaves(self) -> list[Unit]:
        return [u for m in self.members for u in m.leaves()]

    def outer_mode(self) -> LinkMode:
        return self.outer

    def clone(self, mapping: dict[Unit, Unit]) -> Self:
        twin = object.__new__(type(self))
        Container.__init__(twin, [m.clone(mapping) for m in self.members], self.name)
        twin.segment, twin.inner, twin.outer = self.segment, self.inner, self.outer
        twin.via_config = self.via_config
        _copy_internal_edges(self.units(), mapping)
        return twin


def outer_mode(node: Unit | Container) -> LinkMode:
    return node.outer_mode() if isinstance(node, Container) else "dense"


def link(leaves: list[Unit], roots: list[Unit], mode: LinkMode) -> None:
    if mode == "broadcast" and len(leaves) != len(roots):
        raise ConfigurationError(f"broadcast links the i-th leaf to the i-th root, but there are {len(leaves)} "
                                 f"leaves ({_names(leaves)}) and {len(roots)} roots ({_names(roots)})")
    for i, root in enumerate(roots):
        if mode == "dense":
            sources = leaves
        elif mode == "broadcast":
            sources = [leaves[i]]
        elif mode == "cumulative":
            sources = leaves[: i + 1]
        else:
            sources = leaves[-1:]
        for leaf in sources:
            _edge(leaf, root)


def chain(left: Unit | Container, right: Any) -> Block:
    """`left >> right`: link and return a Block holding both. A Block on the left grows (keeping its name,
    so `Block("debate") >> a >> b` is one named block); an anonymous Block on the right is flattened."""
    if not isinstance(right, Node):
        raise ConfigurationError(f"cannot link {type(left).__name__} >> {type(right).__name__}")
    right = cast("Unit | Container", right)  # a Node is one of the two
    if isinstance(left, Block):  # a (named) Block or Pipeline grows, keeping its type and name
        if left.members:
            link(left.leaves(), right.roots(), left.outer_mode())
        twin = type(left)(left.name, [*left.members, *_flatten(right)])
        twin.via_config = left.via_config
        return twin
    link(left.leaves(), right.roots(), outer_mode(left))
    return Block(None, [left, *_flatten(right)])


def _flatten(node: Unit | Container) -> list[Unit | Container]:
    if type(node) is Block and node.name is None and node.via_config is None:
        return list(node.members)
    return [node]


def _unravel(units: Any) -> list[Unit | Container]:
    if isinstance(units, Node):
        return [cast("Unit | Container", units)]  # a Node is one of the two
    if isinstance(units, list | tuple):
        return [m for item in units for m in _unravel(item)]
    raise ConfigurationError(f"a Layer holds units or containers, not {type(units).__name__}")


def _edge(upstream: Unit, downstream: Unit) -> None:
    if upstream is downstream:
        raise ConfigurationError(f"unit {upstream.name!r} cannot depend on itself")
    upstream.dependents.append(downstream)
    downstream.dependencies.append(upstream)


def _copy_internal_edges(originals: Iterator[Unit], mapping: dict[Unit, Unit]) -> None:
    for unit in originals:
        for dependency in unit.dependencies:
            if dependency in mapping and mapping[dependency] not in mapping[unit].dependencies:
                _edge(mapping[dependency], mapping[unit])


def _names(units: list[Unit]) -> str:
    return ", ".join(u.name for u in units) or "none"
