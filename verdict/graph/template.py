"""Prompt templates: `@system`/`@user`/`@assistant` sections with `{expression}` holes.

Expressions are Python over the names `source`, `previous`, `input` and `unit` only. Each is parsed with
`ast` and checked against a whitelist of node types before being compiled (once, at build time); it is
evaluated with a namespace holding just those names and a few safe builtins. Interpolated values are
inserted as text and never evaluated: the template is split into literal and expression pieces before
any data is seen. `{{` and `}}` are literal braces.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any

from pydantic import BaseModel

from verdict.graph.errors import TemplateError
from verdict.models.base import Message, Role

NAMESPACE = ("source", "previous", "input", "unit")

SAFE_BUILTINS: dict[str, Any] = {
    f.__name__: f
    for f in (abs, all, any, bool, dict, enumerate, float, int, len, list, max, min, range, reversed,
              round, set, sorted, str, sum, tuple, zip)
}

_ALLOWED_NODES = (
    ast.Expression, ast.Name, ast.Load, ast.Store, ast.Attribute, ast.Subscript, ast.Slice, ast.Constant,
    ast.Call, ast.keyword, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.List,
    ast.Dict, ast.Set, ast.JoinedStr, ast.FormattedValue, ast.GeneratorExp, ast.ListComp, ast.SetComp,
    ast.DictComp, ast.comprehension, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.Starred,
)
# Pow and LShift build astronomically large numbers from a short template; neither is needed in a prompt.
_FORBIDDEN_OPERATORS = (ast.Pow, ast.LShift)
# str.format / format_map resolve attribute paths inside their format string, bypassing the `_` check.
# Frame/code attributes of generators and tracebacks reach the interpreter's globals without an underscore.
_FORBIDDEN_ATTRIBUTES = frozenset({
    "format", "format_map", "mro", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code",
    "f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "tb_next",
})

_SECTION_MARKERS: dict[str, Role] = {"@system": "system", "@user": "user", "@assistant": "assistant"}
_NO_FORMAT = "@no_format"


@dataclass(frozen=True, slots=True)
class Expression:
    source: str
    code: CodeType
    names: frozenset[str]


Piece = str | Expression


@dataclass(frozen=True, slots=True)
class Section:
    role: Role
    pieces: tuple[Piece, ...]


@dataclass(frozen=True, slots=True)
class CompiledTemplate:
    sections: tuple[Section, ...]

    @property
    def names(self) -> frozenset[str]:
        """Namespace names the template's expressions use (e.g. to refuse `source` in pinned units)."""
        return frozenset().union(*(p.names for s in self.sections for p in s.pieces if isinstance(p, Expression)))

    def render(self, namespace: Mapping[str, Any]) -> tuple[Message, ...]:
        # A fresh builtins dict per render: nothing a template does can leak into another render.
        scope = {"__builtins__": dict(SAFE_BUILTINS), **namespace}
        messages = []
        for section in self.sections:
            parts = []
            for piece in section.pieces:
                if isinstance(piece, str):
                    parts.append(piece)
                    continue
                try:
                    parts.append(str(eval(piece.code, scope)))  # noqa: S307 - whitelisted AST, restricted scope
                except Exception as exc:
                    raise TemplateError(f"cannot render {{{piece.source}}}: {type(exc).__name__}: {exc}") from None
            messages.append(Message(section.role, "".join(parts)))
        return tuple(messages)


def compile_template(text: str) -> CompiledTemplate:
    formatted = _NO_FORMAT not in text
    text = "\n".join(line for line in text.split("\n") if line.strip() != _NO_FORMAT)
    sections: list[tuple[Role, list[str]]] = []
    role: Role = "user"
    lines: list[str] = []
    for line in text.split("\n"):
        marker = _SECTION_MARKERS.get(line.strip())
        if marker is None:
            lines.append(line.lstrip() if formatted else line)
            continue
        sections.append((role, lines))
        role, lines = marker, []
    sections.append((role, lines))
    compiled = []
    for role, section_lines in sections:
        body = "\n".join(section_lines)
        if formatted:
            body = body.strip("\n")
        if body.strip():
            compiled.append(Section(role, tuple(_split(body))))
    if not compiled:
        raise TemplateError("the prompt template is empty")
    return CompiledTemplate(tuple(compiled))


def _split(body: str) -> list[Piece]:
    pieces: list[Piece] = []
    literal: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch in "{}" and body.startswith(ch * 2, i):
            literal.append(ch)
            i += 2
        elif ch == "}":
            raise TemplateError(f"unmatched '}}' at offset {i} of the prompt template (use '}}}}' for a brace)")
        elif ch == "{":
            expression, i = _expression_at(body, i)
            if literal:
                pieces.append("".join(literal))
                literal = []
            pieces.append(expression)
        else:
            literal.append(ch)
            i += 1
    if literal:
        pieces.append("".join(literal))
    return pieces


def _expression_at(body: str, start: int) -> tuple[Expression, int]:
    """The expression opened at `start`: the shortest `{...}` whose content parses as Python."""
    end = body.find("}", start + 1)
    last_error: SyntaxError | None = None
    while end != -1:
        source = body[start + 1 : end]
        tree = _parse(source)
        if isinstance(tree, SyntaxError):
            last_error = tree
        else:
            return Expression(source, compile(tree, "<prompt>", "eval"), _check(tree, source)), end + 1
        end = body.find("}", end + 1)
    detail = f": {last_error.msg}" if last_error else ""
    raise TemplateError(f"unterminated or invalid expression at offset {start} of the prompt template{detail}")


def _parse(source: str) -> ast.Expression | SyntaxError:
    if not source.strip():
        return SyntaxError("empty expression")
    try:
        return ast.parse(source.strip(), mode="eval")
    except SyntaxError as first:
        # A "\n" written in a non-raw template string arrives as a real newline inside a string literal.
        if "\n" not in source:
            return first
        try:
            return ast.parse(source.strip().replace("\n", "\\n"), mode="eval")
        except SyntaxError:
            return first


_COMPREHENSIONS = (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)


def _check(tree: ast.Expression, source: str) -> frozenset[str]:
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES) or isinstance(node, _FORBIDDEN_OPERATORS):
            raise TemplateError(f"{{{source}}}: {type(node).__name__} is not allowed in a prompt expression")
        if isinstance(node, ast.Attribute) and (node.attr.startswith("_") or node.attr in _FORBIDDEN_ATTRIBUTES):
            raise TemplateError(f"{{{source}}}: attribute {node.attr!r} is not allowed in a prompt expression")
        # Dunder names (`__builtins__`, ...) would reach the evaluation scope itself, even as loop variables.
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise TemplateError(f"{{{source}}}: name {node.id!r} is not allowed in a prompt expression")
    used: set[str] = set()
    _check_names(tree.body, frozenset(), used, source)
    return frozenset(used & set(NAMESPACE))


def _check_names(node: ast.AST, bound: frozenset[str], used: set[str], source: str) -> None:
    """Every loaded name is in scope: a comprehension variable only inside its own comprehension."""
    if isinstance(node, _COMPREHENSIONS):
        for generator in node.generators:
            # The first iterable is evaluated outside the comprehension; later ones see earlier variables.
            _check_names(generator.iter, bound, used, source)
            bound = bound | {t.id for t in ast.walk(generator.target) if isinstance(t, ast.Name)}
            for condition in generator.ifs:
                _check_names(condition, bound, used, source)
        for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
            _check_names(part, bound, used, source)
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
        if node.id not in NAMESPACE and node.id not in SAFE_BUILTINS:
            raise TemplateError(
                f"{{{source}}}: unknown name {node.id!r}; prompt expressions see only "
                f"{', '.join(NAMESPACE)} and the builtins {', '.join(sorted(SAFE_BUILTINS))}"
            )
        used.add(node.id)
    for child in ast.iter_child_nodes(node):
        _check_names(child, bound, used, source)


class AttributeView:
    """Attribute access over a mapping, so `{source.question}` works for dict samples."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"the sample has no field {name!r} (fields: {', '.join(self._data)})") from None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]
    def __str__(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self._data.items())


def mapping_of(view: AttributeView) -> Mapping[str, Any]:
    return view._data


class SameNameGroup(Sequence[Any]):
    """The outputs of the dependencies sharing one short name, in definition order."""

    __slots__ = ("_name", "_outputs")

    def __init__(self, name: str, outputs: list[Any]) -> None:
        self._name, self._outputs = name, outputs

    def __getitem__(self, index: Any) -> Any:
        try:
            return self._outputs[index]
        except IndexError:
            raise IndexError(f"previous.{self._name}[{index}]: there are {len(self._outputs)} "
                             f"dependencies named {self._name!r}") from None

    def __len__(self) -> int:
        return len(self._outputs)

    def __getattr__(self, name: str) -> Any:
        if len(self._outputs) == 1:
            return getattr(self._outputs[0], name)
        raise AttributeError(f"previous.{self._name}.{name} is ambiguous: {len(self._outputs)} dependencies "
                             f"are named {self._name!r}; pick one with previous.{self._name}[i].{name}")

    def __str__(self) -> str:
        return str(self._outputs[0]) if len(self._outputs) == 1 else str(self._outputs)


def _has_field(output: Any, name: str) -> bool:
    if isinstance(output, BaseModel):
        return name in type(output).model_fields or name in (output.__pydantic_extra__ or {})
    return False


class PreviousView:
    """`previous` in a template: `previous.score` (one dependency), `previous.judge.score` by short
    name, `previous.judge[2].explanation` by position among same-named ones, `previous[i]` overall.
    With one dependency, a field of its output wins over its short name (`previous.rubric` of a unit named
    `rubric` with a field `rubric` is the field)."""

    __slots__ = ("_names", "_outputs")

    def __init__(self, names: tuple[str, ...], outputs: list[Any]) -> None:
        self._names, self._outputs = names, outputs

    def __getattr__(self, name: str) -> Any:
        # With one dependency, a field of its output wins over the unit's short name: a `RubricUnit` with a
        # field `rubric` gives `previous.rubric` = that field (the output itself is `previous[0]`).
        if len(self._outputs) == 1 and _has_field(self._outputs[0], name):
            return getattr(self._outputs[0], name)
        group = [o for n, o in zip(self._names, self._outputs, strict=True) if n == name]
        if group:
            return SameNameGroup(name, group)
        if len(self._outputs) == 1:
            return getattr(self._outputs[0], name)
        known = ", ".join(dict.fromkeys(self._names)) or "none"
        raise AttributeError(f"previous has no dependency named {name!r} (dependencies: {known})")

    def __getitem__(self, index: int) -> Any:
        return self._outputs[index]

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self):
        return iter(self._outputs)
