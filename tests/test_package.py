from tests.imports import loaded_after


def test_import_verdict_stays_light():
    """Apps import verdict; it must not drag in the server or ML stacks."""
    heavy = ("duckdb", "scipy", "torch", "numpy", "pyarrow", "sentence_transformers")
    assert loaded_after("import verdict", heavy) == []


def test_unknown_public_name_is_attribute_error():
    import verdict

    try:
        verdict.does_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_public_names_resolve():
    """Every name `verdict` advertises resolves to a real object, lazily."""
    import verdict

    for name in verdict.__all__:
        assert getattr(verdict, name) is not None, name


def test_import_verdict_drift_stays_light():
    """The drift package's modules import numpy, scipy and pyarrow inside functions only."""
    heavy = ("duckdb", "scipy", "numpy", "pyarrow")
    assert loaded_after("import verdict.drift", heavy) == []
    assert loaded_after("from verdict.drift import DriftDetector, DriftReport", heavy) == []
