"""verdict_daemon's own layout (docs/architecture.md, "Daemon layout"): its parts import one way,

    config, errors  <-  store  <-  the cycle's steps and the features  <-  the service's composition  <-  cli

so the store never reaches for a step, a feature never for the CLI or the scheduler, and the CLI holds only
argument parsing and output. Every module must belong to a part: a new one is placed on purpose.
"""

from pathlib import Path

import pytest

from tests.architecture.imports import Import, all_imports, find_modules

ROOT = Path(__file__).resolve().parents[2]

# Bottom first; a module's part is its longest matching prefix. Steps and features may import each other
# (without cycles: test_layers.py): assign needs sampling's UNASSIGNED, the report reads drift runs.
PARTS: tuple[tuple[str, ...], ...] = (
    # the bottom: configuration, errors, the lakes, and the cluster registry's value types the store returns
    ("verdict_daemon.config", "verdict_daemon.errors", "verdict_daemon.lakes", "verdict_daemon.clustering.errors",
     "verdict_daemon.clustering.versions"),
    ("verdict_daemon.store",),
    ("verdict_daemon.service", "verdict_daemon.clustering", "verdict_daemon.review", "verdict_daemon.report",
     "verdict_daemon.probes", "verdict_daemon.tenant_data"),
    ("verdict_daemon.service.cycle", "verdict_daemon.service.daemon", "verdict_daemon.service.probe_job"),
    ("verdict_daemon.cli",),
)


def part_of(module: str) -> int | None:
    matches = [(len(prefix), level) for level, prefixes in enumerate(PARTS) for prefix in prefixes
               if module == prefix or module.startswith(prefix + ".")]
    return max(matches)[1] if matches else None


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return [i for i in all_imports(ROOT, ("verdict_daemon",)) if i.target.startswith("verdict_daemon.")]


def test_every_daemon_module_has_a_part():
    modules = [m for m in find_modules(ROOT, ("verdict_daemon",)) if m != "verdict_daemon"]
    assert [m for m in modules if part_of(m) is None] == []


def test_the_parts_import_one_way(imports):
    upward = [str(i) for i in imports if (part_of(i.target) or 0) > (part_of(i.source) or 0)]
    assert upward == []


def test_the_parts_are_read(imports):
    """The rule is about real code: each part is imported from above (a renamed package would pass in silence)."""
    assert {part_of(i.target) for i in imports if part_of(i.target) != part_of(i.source)} == set(range(len(PARTS) - 1))
