"""Import weight: `import verdict` never loads the probes package, and the probes modules load no heavy
dependency until a suite is read or a run starts."""

from tests.imports import loaded_after

HEAVY = ("verdict.probes", "verdict.probes.runner", "yaml", "numpy", "scipy", "duckdb", "pyarrow", "openai")


def test_import_verdict_does_not_load_probes():
    assert loaded_after("import verdict", HEAVY) == []


def test_the_probes_package_and_command_are_light():
    assert loaded_after("import verdict.probes", HEAVY) == ["verdict.probes"]
    assert loaded_after("import verdict_daemon.cli.probes", HEAVY) == []
    assert loaded_after("from verdict.probes import load_artifact", HEAVY) == ["verdict.probes"]
