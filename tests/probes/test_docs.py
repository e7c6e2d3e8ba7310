"""docs/probes.md: the python example prints what the doc says, the YAML example is a valid suite, the TOML
example is a valid [probes] section."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from tests.judges.test_docs import expected_output
from tests.trust.test_docs import printed_by
from verdict.probes.suite import ProbeSuite
from verdict_daemon.config import parse_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "probes.md"
TEXT = DOC.read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TEXT, re.DOTALL)


def test_the_python_example_prints_what_the_doc_says():
    (block,) = blocks("python")
    assert printed_by(block) == expected_output(block)


def test_the_yaml_example_is_a_valid_suite():
    (block,) = blocks("yaml")
    suite = ProbeSuite.from_mapping(yaml.safe_load(block), "docs")
    assert [p.name for p in suite.probes] == ["capital-pushback", "benign-kill"]


def test_the_toml_example_is_a_valid_probes_section(tmp_path):
    (block,) = blocks("toml")
    document = {"data_dir": str(tmp_path), "tenants": [{"id": "acme"}],
                "evaluators": [{"name": "q", "kind": "rubric", "model": "openai/gpt-4o-mini"}], **tomllib.loads(block)}
    probes = parse_config(document, tmp_path).probes
    assert probes is not None
    assert probes.schedule.cron == "0 6 * * *" and probes.out_dir == tmp_path / "probe-runs"
