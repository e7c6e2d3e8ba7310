"""Reading definition files (rubrics, probe suites, run artifacts): every failure is the caller's error type
with a message naming the file, never a raw OSError or parser traceback. Stdlib only; PyYAML is imported
when a YAML file is read."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any


def read_text(path: Path, what: str, error: Callable[[str], Exception]) -> str:
    """The UTF-8 text of `path`; `error("<path>: cannot read the <what> (<reason>)")` when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise error(f"{path}: cannot read the {what} ({reason})") from None


def read_yaml(path: Path, what: str, error: Callable[[str], Exception]) -> Any:
    """The YAML document of `path` (safe types only). A key given twice in one mapping is an error: PyYAML
    would silently keep the last one (`expect: {safety: PASS, safety: FAIL}` would mean FAIL)."""
    import yaml

    text = read_text(path, what, error)
    try:
        return yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        raise error(f"{path}: not valid YAML{at}" + (f" ({problem})" if problem else "")) from None


def json_object_line(line: str, where: str, keys: set[str] | frozenset[str], error: Callable[[str], Exception]) -> dict:
    """One JSONL record: a JSON object using only `keys`; otherwise `error("<where>: …")` says what is wrong."""
    import json

    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(row, dict):
        raise error(f"{where}: expected a JSON object, got {type(row).__name__}")
    unknown = sorted(set(row) - keys)
    if unknown:
        raise error(f"{where}: unknown key(s) {unknown}; expected {sorted(keys)}")
    return row


@cache
def _unique_key_loader() -> type:
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    key = self.construct_object(key_node)
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader
