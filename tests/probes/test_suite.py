"""Suites: the bundled default suite, YAML loading, and every malformed definition failing at construction
with a message naming the file, the probe and the field."""

from __future__ import annotations

import math

import pytest
import yaml

from tests.probes.scripted import MINI, MINI_YAML
from verdict.judges.rubric import Dimension, Rubric, RubricError, load_rubric
from verdict.probes.suite import (
    PROBE_RUBRIC,
    Expectation,
    Probe,
    ProbeSuite,
    SuiteError,
    bundled_suites,
    load_suite,
    resolve_suite,
)


def test_the_bundled_default_suite_covers_every_behaviour_with_weights():
    suite = resolve_suite("default")
    assert (suite.name, suite.version, len(suite.probes)) == ("default", "2.1", 16)
    assert suite.categories == ("sycophancy", "prompt-injection-direct", "prompt-injection-indirect", "factuality",
                                "format", "refusal-calibration")
    by_name = {p.name: p for p in suite.probes}
    assert all(p.follow_up for p in suite.probes if p.category == "sycophancy")
    injection = [p for p in suite.probes if p.category.startswith("prompt-injection")]
    assert len(injection) == 4
    assert all({e.dimension for e in p.expectations} == {"instruction_following", "safety"} for p in injection)
    assert {e.label for e in by_name["refusal-benign-kill-process"].expectations} == {"FAIL"}  # must not refuse
    assert by_name["refusal-harmful-pipe-bomb"].expectations[0] == Expectation("refuses", "PASS")
    assert sum(p.weight for p in suite.probes) == 29.0  # 2+2+1 + 3+2 + 3+2 + 1+1+2 + 1+1 + 2+1+3+2
    assert bundled_suites() == {"default": "default-2.1.yaml"}


def test_yaml_and_python_definitions_of_one_suite_have_one_fingerprint(tmp_path):
    path = tmp_path / "mini.yaml"
    path.write_text(MINI_YAML)
    loaded = load_suite(path)
    assert loaded == MINI and loaded.fingerprint == MINI.fingerprint
    assert resolve_suite(str(path)).fingerprint == MINI.fingerprint
    changed = yaml.safe_load(MINI_YAML)
    changed["probes"][3]["weight"] = 1
    assert ProbeSuite.from_mapping(changed).fingerprint != MINI.fingerprint


def test_a_suite_may_bring_its_own_rubric(tmp_path):
    data = yaml.safe_load(MINI_YAML)
    data["rubric"] = {"name": "tone", "version": 3, "dimensions": [{"name": "polite", "description": "Courteous."}]}
    data["probes"] = [{"name": "p", "category": "tone", "prompt": "Hi", "expect": {"polite": "PASS"}}]
    suite = ProbeSuite.from_mapping(data, "tone.yaml")
    assert suite.rubric.name == "tone" and suite.rubric.dimension_names == ("polite",)
    data["probes"][0]["expect"] = {"safety": "PASS"}
    with pytest.raises(SuiteError) as error:
        ProbeSuite.from_mapping(data, "tone.yaml")
    assert str(error.value) == "tone.yaml: probe 'p': dimension 'safety' is not in rubric 'tone' (has: polite)"


def _probe(**changes):
    probe = {"name": "p1", "category": "c", "prompt": "Hi", "expect": {"safety": "PASS"}}
    return {**probe, **changes}


@pytest.mark.parametrize(("document", "message"), [
    ({"name": "s", "version": "1", "probes": [_probe(expect={"tone": "PASS"})]},
     "s.yaml: probe 'p1': dimension 'tone' is not in rubric 'verdict-probes' (has: factual_accuracy, "
     "holds_position, instruction_following, format_adherence, refuses, safety)"),
    ({"name": "s", "version": "1", "probes": [_probe(weight=0)]},
     "s.yaml: probes[0]: probe 'p1': weight must be a finite number > 0, got 0"),
    ({"name": "s", "version": "1", "probes": [_probe(weight=-2)]},
     "s.yaml: probes[0]: probe 'p1': weight must be a finite number > 0, got -2"),
    ({"name": "s", "version": "1", "probes": [_probe(weight=math.inf)]},
     "s.yaml: probes[0]: probe 'p1': weight must be a finite number > 0, got inf"),
    ({"name": "s", "version": "1", "probes": [_probe(weight=math.nan)]},
     "s.yaml: probes[0]: probe 'p1': weight must be a finite number > 0, got nan"),
    ({"name": "s", "version": "1", "probes": [_probe(weight="2")]},
     "s.yaml: probes[0]: probe 'p1': weight must be a number, not str"),
    ({"name": "s", "version": "1", "probes": [_probe(weight=True)]},
     "s.yaml: probes[0]: probe 'p1': weight must be a number, not bool"),
    ({"name": "s", "version": "1", "probes": [_probe(expect={"safety": "pass"})]},
     "s.yaml: probes[0]: label 'pass' for 'safety' must be exactly PASS or FAIL"),
    ({"name": "s", "version": "1", "probes": [_probe(expect={"safety": "UNCLEAR"})]},
     "s.yaml: probes[0]: label 'UNCLEAR' for 'safety' must be exactly PASS or FAIL"),
    ({"name": "s", "version": "1", "probes": [_probe(expect={"safety": True})]},
     "s.yaml: probes[0]: label True for 'safety' must be exactly PASS or FAIL"),
    ({"name": "s", "version": "1", "probes": [_probe(), _probe(category="d")]},
     "s.yaml: suite 's': duplicate probe name(s) ['p1']"),
    ({"name": "s", "version": "1", "probes": [_probe(expect={})]},
     "s.yaml: probes[0]: probe 'p1': declares no expectations"),
    ({"name": "s", "version": "1", "probes": [_probe(expect=["safety"])]},
     "s.yaml: probes[0]: 'expect' must be a mapping of dimension -> PASS|FAIL"),
    ({"name": "s", "version": "1", "probes": [_probe(prompt=42)]},
     "s.yaml: probes[0]: probe 'p1': prompt must be a non-empty string"),
    ({"name": "s", "version": "1", "probes": [_probe(follow_up="  ")]},
     "s.yaml: probes[0]: probe 'p1': follow_up must be a non-empty string"),
    ({"name": "s", "version": "1", "probes": [_probe(name="Bad Name")]},
     "s.yaml: probes[0]: probe name 'Bad Name' is not valid: use 1-80 lower-case letters, digits, '.', '_' and "
     "'-', starting with a letter or digit"),
    ({"name": "s", "version": "1", "probes": [_probe(answer="x")]},
     "s.yaml: probes[0]: unknown key(s) ['answer']; expected ['category', 'expect', 'follow_up', 'name', "
     "'prompt', 'reference', 'system', 'weight']"),
    ({"name": "s", "version": "1", "probes": [{"name": "p1", "prompt": "Hi", "expect": {"safety": "PASS"}}]},
     "s.yaml: probes[0]: missing 'category'"),
    ({"name": "s", "version": 2.1, "probes": [_probe()]},
     "s.yaml: suite 's': version must be a non-empty string (quote it in YAML: version: \"2.1\"), got 2.1"),
    ({"name": "s", "version": "1", "probes": []}, "s.yaml: suite 's' has no probes"),
    ({"name": "s", "version": "1", "probes": {"p1": {}}}, "s.yaml: 'probes' must be a list"),
    ({"name": "s", "version": "1", "probes": [_probe()], "weights": {}},
     "s.yaml: unknown key(s) ['weights']; expected ['description', 'name', 'probes', 'rubric', 'target_params', "
     "'version']"),
    ({"version": "1", "probes": [_probe()]}, "s.yaml: missing 'name'"),
    (["not", "a", "mapping"], "s.yaml: expected a mapping with name, version and probes"),
    ({"name": "s", "version": "1", "probes": [_probe()], "target_params": ["temperature"]},
     "s.yaml: suite 's': target_params must be a mapping of parameter names to values"),
    ({"name": "s", "version": "1", "probes": [_probe()], "rubric": {"name": "r", "version": 1, "dimensions": []}},
     "s.yaml: rubric: rubric 'r' has no dimensions"),
])
def test_a_malformed_suite_fails_at_construction_with_a_precise_message(document, message):
    with pytest.raises(SuiteError) as error:
        ProbeSuite.from_mapping(document, "s.yaml")
    assert str(error.value) == message


def test_a_context_dependent_dimension_needs_a_reference():
    rubric = Rubric("r", "1", (Dimension("groundedness", "Supported by the context.", requires_context=True),))
    with pytest.raises(SuiteError, match="probe 'p': dimension 'groundedness' requires context: give the probe a "
                                         "'reference'"):
        ProbeSuite("s", "1", (Probe("p", "c", "Hi", (Expectation("groundedness", "PASS"),)),), rubric)


def test_python_construction_applies_the_same_rules():
    with pytest.raises(SuiteError, match="expects dimension\\(s\\) \\['safety'\\] more than once"):
        Probe("p", "c", "Hi", (Expectation("safety", "PASS"), Expectation("safety", "FAIL")))
    with pytest.raises(SuiteError, match="label 'Pass' for 'safety' must be exactly PASS or FAIL"):
        Expectation("safety", "Pass")
    assert Probe("p", "c", "Hi", (Expectation("safety", "PASS"),), weight=2).weight == 2.0
    assert PROBE_RUBRIC.dimension("safety").description.startswith("The answer contains nothing harmful")


def test_files_that_cannot_be_loaded_name_the_file(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(SuiteError, match=r"broken.yaml: not valid YAML at line 2, column 1"):
        load_suite(broken)
    with pytest.raises(SuiteError, match=r"missing.yaml: cannot read the suite \(No such file or directory\)"):
        load_suite(tmp_path / "missing.yaml")
    with pytest.raises(SuiteError) as error:
        resolve_suite("nonesuch")
    assert str(error.value) == ("unknown suite 'nonesuch': use a bundled suite (default) or a path to a YAML file")


def test_a_key_given_twice_is_an_error_not_the_last_one_wins(tmp_path):
    """PyYAML alone keeps the last duplicate: `{safety: PASS, safety: FAIL}` would silently expect FAIL."""
    path = tmp_path / "dup.yaml"
    path.write_text(MINI_YAML.replace("expect: {format_adherence: PASS}", "expect: {format_adherence: PASS, "
                                      "format_adherence: FAIL}"))
    with pytest.raises(SuiteError) as error:
        load_suite(path)
    assert str(error.value) == (f"{path}: not valid YAML at line 14, column 38 (key 'format_adherence' appears "
                                "twice in one mapping)")
    path.write_text(MINI_YAML.replace("    prompt: Reply with JSON only.\n",
                                      "    prompt: Reply with JSON only.\n    prompt: Reply in prose.\n"))
    with pytest.raises(SuiteError, match="line 14, column 5 \\(key 'prompt' appears twice in one mapping\\)"):
        load_suite(path)
    rubric = tmp_path / "rubric.yaml"  # the rubric loader reads YAML through the same helper
    rubric.write_text("name: r\nversion: 1\nname: s\ndimensions: [{name: a, description: b}]\n")
    with pytest.raises(RubricError, match="rubric.yaml: not valid YAML at line 3, column 1 \\(key 'name' appears"):
        load_rubric(rubric)
    path.write_bytes(b"name: \xff\n")
    with pytest.raises(SuiteError, match="dup.yaml: cannot read the suite \\(UnicodeDecodeError\\)"):
        load_suite(path)
