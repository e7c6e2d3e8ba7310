"""The benchmark's corpora mean what they say: clean prose has no finding (a negative corpus at
scale), the secrets corpus has one about every 200 bytes, from every detector."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from verdict.redact import LABELS, Redactor

_spec = importlib.util.spec_from_file_location(
    "bench_redact", Path(__file__).parents[2] / "bench" / "redact.py"
)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_clean_prose_corpus_has_no_finding() -> None:
    assert Redactor().find(bench.build(50_000, with_secrets=False)) == []


def test_secrets_corpus_has_a_finding_every_200_bytes_from_every_detector() -> None:
    doc = bench.build(50_000, with_secrets=True)
    found = Redactor().find(doc)
    assert len(doc) / len(found) <= 220
    assert {f.label for f in found} == set(LABELS)
