"""Every import between the product's packages, read from the source (AST), for the layer contract.

An import is found wherever it is written: at module level, inside a function (a lazy import is still a
dependency), under `if TYPE_CHECKING:` (marked type-only), or as a string that names one of our modules
exactly (`importlib.import_module("pkg.mod")`, a `"pkg.mod:attr"` table entry), since a string is how a
registry or a dispatcher reaches a module without an import statement.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# The layers, bottom first: each may import the ones before it and never the ones after it.
LAYERS = ("verdict", "verdict_eval", "collector", "verdict_daemon", "verdict_ui", "verdict_demo")
# The collector and the daemon are side by side above the SDK: neither imports the other's upward.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "verdict": ("verdict_eval", "collector", "verdict_daemon", "verdict_ui", "verdict_demo"),
    # seed 003's import path: aliases of `verdict` names, used by nothing of ours
    "verdict_eval": ("collector", "verdict_daemon", "verdict_ui", "verdict_demo"),
    "collector": ("verdict_daemon", "verdict_ui", "verdict_demo"),
    "verdict_daemon": ("verdict_ui", "verdict_demo"),
    "verdict_ui": ("verdict_demo",),
    "verdict_demo": (),
}
# "pkg.mod" or "pkg.mod:attr" or "pkg:attr" (a bare word is too often just a word).
_MODULE_STRING = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_][\w.]*)?|([A-Za-z_]\w*):[A-Za-z_][\w.]*")


@dataclass(frozen=True, slots=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (one of ours)
    line: int
    type_only: bool = False  # under `if TYPE_CHECKING:`: no run-time dependency
    dynamic: bool = False  # a string naming the module, not an import statement

    def __str__(self) -> str:
        how = " (type-only)" if self.type_only else " (by name, in a string)" if self.dynamic else ""
        return f"{self.source}:{self.line} imports {self.target}{how}"


def find_modules(root: Path, packages: Iterable[str] = LAYERS) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of `packages` under `root`."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def layer_of(module: str) -> str:
    return module.split(".")[0]


def imports_of(module: str, path: Path, known: set[str]) -> list[Import]:
    """The imports of one module that land on a module in `known`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node, type_only in _walk(tree, False):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.module, node.level)
            # `from pkg import mod` imports the module pkg.mod; `from pkg.mod import name` imports pkg.mod
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = _MODULE_STRING.fullmatch(node.value)
            target = named and (named.group(1) or named.group(2))
            if target and target in known and target != module:
                found.append(Import(module, target, node.lineno, type_only, dynamic=True))
            continue
        else:
            continue
        for target in dict.fromkeys(targets):
            resolved = _known_prefix(target, known)
            if resolved is not None and resolved != module:
                found.append(Import(module, resolved, node.lineno, type_only))
    return found


def compiled_modules(root: Path, packages: Iterable[str] = LAYERS) -> set[str]:
    """Dotted names of the C extensions (setup.py names each after its source file): they import nothing
    of ours, and an import of one is an import of it, not of its package."""
    return {".".join(path.relative_to(root).with_suffix("").parts)
            for package in packages for path in (root / package).rglob("*.c")}  # fmt: skip


def all_imports(root: Path, packages: Iterable[str] = LAYERS) -> list[Import]:
    modules = find_modules(root, packages)
    known = set(modules) | compiled_modules(root, packages)
    return [imp for name, path in modules.items() for imp in imports_of(name, path, known)]


def upward(imports: Iterable[Import]) -> list[Import]:
    """Imports that point up the layers (FORBIDDEN), type-only and by-name ones included."""
    return [imp for imp in imports if layer_of(imp.target) in FORBIDDEN.get(layer_of(imp.source), ())]


def cycles(imports: Iterable[Import]) -> list[list[str]]:
    """The import cycles among modules (strongly connected components of more than one module) over the
    imports that run: module-level and function-level statements, not type-only ones nor strings."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if not (imp.type_only or imp.dynamic):
            graph.setdefault(imp.source, set()).add(imp.target)
            graph.setdefault(imp.target, set())
    return sorted(sorted(c) for c in _components(graph) if len(c) > 1)


def _walk(node: ast.AST, type_only: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        yield child, type_only
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.body:
                yield statement, True
                yield from _walk(statement, True)
            for statement in child.orelse:
                yield statement, type_only
                yield from _walk(statement, type_only)
        else:
            yield from _walk(child, type_only)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _absolute(module: str, is_package: bool, name: str | None, level: int) -> str:
    if level == 0:
        return name or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _known_prefix(target: str, known: set[str]) -> str | None:
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def _components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively (deep import chains exceed the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    result.append(component)
    return result
