"""The import contract (docs/architecture.md, "Layers"): layers only point down, and no module imports
itself through others.

    verdict (SDK, engine, judges, stats)  <-  collector, verdict_daemon  <-  verdict_demo

`verdict/` imports nothing from `collector/`, `verdict_daemon/` or `verdict_demo/`; `collector/` nothing
from `verdict_daemon/` or `verdict_demo/`; `verdict_daemon/` nothing from `verdict_demo/`. Function-level
imports, `TYPE_CHECKING` imports and module names in strings count. The cycle check covers every import
that runs (module- and function-level); a `TYPE_CHECKING` import never runs, so it cannot make one.
"""

from pathlib import Path

import pytest

from tests.architecture.imports import (
    LAYERS,
    Import,
    all_imports,
    cycles,
    find_modules,
    imports_of,
    upward,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return all_imports(ROOT)


def test_every_layer_is_read(imports):
    """The contract is about real code: each layer has modules, and their imports of each other are found
    (a renamed package would otherwise pass in silence)."""
    modules = find_modules(ROOT)
    assert all(any(m.split(".")[0] == layer for m in modules) for layer in LAYERS)
    assert {(i.source.split(".")[0], i.target.split(".")[0]) for i in imports} >= {
        ("collector", "verdict"), ("verdict_daemon", "verdict"), ("verdict_demo", "verdict_daemon"),
        ("verdict_demo", "collector")}


def test_layers_only_point_down(imports):
    assert [str(i) for i in upward(imports)] == []


def test_no_import_cycles(imports):
    assert cycles(imports) == []


# --- the reader itself, on a small tree with every kind of import the contract must see -------------------
def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_reader_sees_function_level_relative_type_only_and_by_name_imports(tmp_path):
    root = _tree(tmp_path, {
        "verdict/__init__.py": "",
        "verdict/models/__init__.py": "",
        "verdict/models/registry.py": (
            "from typing import TYPE_CHECKING\n"
            "from . import base\n"
            "if TYPE_CHECKING:\n    from collector.views import View\n"
            "def build():\n    from verdict_daemon.demo import judge\n"
            "TABLE = {'offline': 'verdict_demo.judge:heuristic_judge'}\n"
            "NOT_A_MODULE = ('verdict_daemon', 'collector.lock', 'verdict.tenant_id')\n"),
        "verdict/models/base.py": "import verdict.models\n",
        "collector/__init__.py": "",
        "collector/views.py": "from verdict.models.base import x\n",
        "verdict_daemon/__init__.py": "",
        "verdict_daemon/demo/__init__.py": "",
        "verdict_daemon/demo/judge.py": "",
        "verdict_demo/__init__.py": "",
        "verdict_demo/judge.py": "",
    })
    found = all_imports(root)
    assert sorted(map(str, upward(found))) == [
        "verdict.models.registry:4 imports collector.views (type-only)",
        "verdict.models.registry:6 imports verdict_daemon.demo.judge",
        "verdict.models.registry:7 imports verdict_demo.judge (by name, in a string)"]
    registry = root / "verdict/models/registry.py"
    assert Import("verdict.models.registry", "verdict.models.base", 2) in imports_of(
        "verdict.models.registry", registry, set(find_modules(root)))


def test_the_reader_finds_cycles_through_function_level_imports_but_not_type_only_ones(tmp_path):
    root = _tree(tmp_path, {
        "verdict/__init__.py": "",
        "verdict/a.py": "from verdict.b import f\n",
        "verdict/b.py": "def f():\n    from verdict.c import g\n",
        "verdict/c.py": "import verdict.a\n",
        "verdict/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from verdict.e import E\n",
        "verdict/e.py": "from verdict.d import D\n",
        "verdict/lazy.py": "NAMES = {'A': 'verdict.a'}\n",
        "verdict/uses_lazy.py": "",
    })
    assert cycles(all_imports(root, ("verdict",))) == [["verdict.a", "verdict.b", "verdict.c"]]
