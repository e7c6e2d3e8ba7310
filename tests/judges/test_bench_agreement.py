"""bench/judges.py's per-model figures (docs/models.md): the parseable share, and agreement with the labelled
set computed from the judge's own verdicts, with "insufficient" under AGREEMENT_MIN_N usable pairs.

A scripted model stands in for the real one (the figures for SmolLM2 come from `--realmodel`): it answers from
a plan per response, so the expected agreement is known."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from verdict.models.scripted import ScriptedModel
from verdict.sentinel import load_sentinel_set

_spec = importlib.util.spec_from_file_location("bench_judges", Path(__file__).parents[2] / "bench" / "judges.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # its dataclass resolves its module by name
_spec.loader.exec_module(bench)


def _labels() -> dict[str, str]:
    from verdict.judges.rubric import DEFAULT_RUBRIC, Rubric

    rubric = Rubric("relevance-only", "1", (DEFAULT_RUBRIC.dimension("relevance"),))
    return {e.response: e.label_map["relevance"] for e in load_sentinel_set(bench.LABELLED_SET, rubric)}


def _model(answer) -> ScriptedModel:
    """Replies per graded response: answer(response, human label) -> the reply text."""
    labels = _labels()

    def reply(request) -> str:
        text = request.messages[-1].content
        response = next(r for r in labels if r in text)
        return answer(response, labels[response])

    return ScriptedModel(reply)


def _verdict(verdict: str) -> str:
    return json.dumps({"verdict": verdict, "rationale": "One sentence.", "evidence": []})


def test_the_labelled_set_is_balanced_and_labelled_for_relevance() -> None:
    labels = list(_labels().values())
    assert len(labels) == 16 and labels.count("PASS") == labels.count("FAIL")


def test_a_judge_that_agrees_with_every_label_has_agreement_one_marked_insufficient_at_small_n() -> None:
    figures = bench.labelled_agreement(_model(lambda _response, label: _verdict(label)))
    assert (figures.items, figures.parseable, figures.usable) == (16, 16, 16)
    assert figures.report.ac1.value == 1.0 and figures.report.kappa.value == 1.0
    line = bench.agreement_line(figures)
    assert "parseable 16/16 (100%), usable 16/16 (100%)" in line and "n=16 usable pairs (insufficient: n < 30)" in line
    assert "AC1 1.00" in line and "raw agreement 16/16" in line


def test_unparseable_replies_count_against_the_share_and_leave_the_agreement() -> None:
    """Every FAIL-labelled item gets a reply that is not JSON: parseable 8/16, and the 8 usable pairs are all
    PASS on both sides (kappa undefined, AC1 still defined)."""
    figures = bench.labelled_agreement(
        _model(lambda _response, label: _verdict("PASS") if label == "PASS" else "I think it is fine."))
    assert (figures.items, figures.parseable, figures.usable) == (16, 8, 8)
    assert figures.report.raw_agreement.trials == 8 and figures.report.kappa is None
    line = bench.agreement_line(figures)
    assert "parseable 8/16 (50%), usable 8/16 (50%)" in line and "kappa n/a" in line and "n=8 usable pairs" in line
    assert figures.failures == (("relevance: extraction: the reply holds no JSON object after 1 attempt(s)", 8),)
    assert figures.example_reply == "I think it is fine."
    assert "unusable 8x: relevance: extraction: the reply holds no JSON object" in line


def test_a_reply_of_the_asked_shape_with_an_invented_quote_is_parseable_but_not_usable() -> None:
    """What SmolLM2-135M does: JSON of the asked shape, evidence quoted from nowhere (the reading rules refuse it)."""
    invented = json.dumps({"verdict": "PASS", "rationale": "On topic.", "evidence": ["items: [1, 2], "]})
    figures = bench.labelled_agreement(_model(lambda _response, _label: invented), items=4)
    assert (figures.items, figures.parseable, figures.usable) == (4, 4, 0)
    assert figures.failures == (("relevance: extraction: relevance: the evidence quote '…' does not occur in the "
                                 "graded answer after 1 attempt(s)", 4),)
    assert "parseable 4/4 (100%), usable 0/4 (0%)" in bench.agreement_line(figures)


def test_the_first_items_only() -> None:
    figures = bench.labelled_agreement(_model(lambda _response, _label: _verdict("FAIL")), items=4)
    assert figures.items == 4 and figures.report.raw_agreement.successes == 2
