from tests.collector.conftest import collector_factory  # noqa: F401  (the real collector process)
