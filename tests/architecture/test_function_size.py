"""No function longer than 80 lines in the product or the benches (issue 18): a longer one is split into
named steps. Lines are counted from the `def` line to the function's last line (ast: end_lineno - lineno + 1),
nested functions and methods included, each on its own and as part of the function around it.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("verdict", "collector", "verdict_daemon", "verdict_ui", "verdict_demo", "bench")
MAX_LINES = 80


def long_functions(root: Path, packages: tuple[str, ...] = PACKAGES, max_lines: int = MAX_LINES) -> list[str]:
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > max_lines:
                        found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_every_package_is_read():
    """A renamed or moved package would otherwise pass in silence."""
    assert all(any((ROOT / package).rglob("*.py")) for package in PACKAGES)


def test_no_function_over_80_lines():
    assert long_functions(ROOT) == []


def _function(name: str, lines: int, indent: str = "", keyword: str = "def") -> str:
    """Source of a function spanning exactly `lines` lines from its `def` line."""
    return f"{indent}{keyword} {name}():\n" + "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))


def test_the_count(tmp_path):
    """80 lines pass (decorators do not count); 81 fail, for methods, async and nested functions too."""
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "m.py").write_text(
        "@decorator\n" + _function("fits", 80)
        + "class C:\n" + _function("method", 81, "    ", "async def")
        + "def outer():\n" + _function("inner", 81, "    ") + "    return inner\n"
    )
    found = long_functions(tmp_path, ("pkg",))
    assert sorted(f.split(" ", 1)[1] for f in found) == ["inner (81 lines)", "method (81 lines)", "outer (83 lines)"]
    assert all(f.startswith("pkg/sub/m.py:") for f in found)
