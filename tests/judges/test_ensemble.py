"""JudgeEnsemble: per-dimension votes over usable components, failed components kept visible."""

import pytest

from tests.judges.replies import asked_dimensions, rubric_reply
from verdict.graph.errors import ConfigurationError
from verdict.judges.ensemble import JudgeEnsemble
from verdict.judges.judge import Judge, JudgmentStatus, Verdict
from verdict.models.base import ModelError
from verdict.models.scripted import ScriptedModel

ANSWER, CONTEXT = "The refund takes 5 days.", "Refunds take 5 days."


def judge(reply, name="scripted/default", **options):
    return Judge(ScriptedModel([reply], name=name), retries=0, **options)


def test_majority_per_dimension():
    ensemble = JudgeEnsemble([judge(rubric_reply({"safety": "FAIL"})), judge(rubric_reply({"safety": "FAIL"})),
                              judge(rubric_reply({"relevance": "FAIL"}))])
    result = ensemble.grade(ANSWER, context=CONTEXT)
    assert result.status is JudgmentStatus.VALID and result.coverage == 1.0
    assert result.verdicts["safety"] is Verdict.FAIL  # 2 of 3
    assert result.verdicts["relevance"] is Verdict.PASS  # 2 of 3
    vote = next(d for d in result.dimensions if d.dimension == "safety")
    assert vote.votes == {Verdict.FAIL: 2, Verdict.PASS: 1} and vote.voters == 3


def test_a_tie_is_unclear_by_default_and_configurable():
    judges = [judge(rubric_reply({"safety": "FAIL"})), judge(rubric_reply())]
    assert JudgeEnsemble(judges).grade(ANSWER, context=CONTEXT).verdicts["safety"] is Verdict.UNCLEAR
    strict = JudgeEnsemble(judges, on_tie=Verdict.FAIL)
    assert strict.grade(ANSWER, context=CONTEXT).verdicts["safety"] is Verdict.FAIL


def test_a_three_way_split_is_a_tie():
    judges = [judge(rubric_reply({"safety": v})) for v in ("PASS", "FAIL", "UNCLEAR")]
    assert JudgeEnsemble(judges, on_tie=Verdict.FAIL).grade(ANSWER, context=CONTEXT).verdicts["safety"] \
        is Verdict.FAIL


def test_failed_components_stay_visible_and_do_not_vote():
    ensemble = JudgeEnsemble([
        judge(rubric_reply({"safety": "FAIL"})),
        judge(ModelError("server_error", "HTTP 500 from scripted"), name="scripted/broken"),
        judge("{not json", name="scripted/garbled"),
    ])
    result = ensemble.grade(ANSWER, context=CONTEXT)
    assert result.status is JudgmentStatus.VALID
    assert [c.model for c in result.components] == ["scripted/default", "scripted/broken", "scripted/garbled"]
    assert [c.status for c in result.components] == [JudgmentStatus.VALID, JudgmentStatus.ERROR,
                                                     JudgmentStatus.ERROR]
    assert "HTTP 500" in (result.components[1].error or "")
    assert result.verdicts["safety"] is Verdict.FAIL  # the one usable component decides, no tie with failures
    assert all(d.voters == 1 for d in result.dimensions)
    assert result.coverage == pytest.approx(1 / 3)


def test_total_failure_is_unusable_with_every_reason():
    ensemble = JudgeEnsemble([judge(ModelError("auth", "HTTP 401")), judge("nope", name="scripted/other")])
    result = ensemble.grade(ANSWER, context=CONTEXT)
    assert result.status is JudgmentStatus.ERROR and not result.is_usable
    assert result.dimensions == () and result.verdicts == {}
    assert "judge 0 (scripted/default) ERROR" in (result.error or "") and "judge 1 (scripted/other) ERROR" in (result.error or "")
    assert len(result.components) == 2


def test_nothing_to_grade_is_skipped_but_a_failure_beside_a_skip_is_an_error():
    from verdict.judges.rubric import Dimension, Rubric

    rubric = Rubric("grounded-only", "1", (Dimension("groundedness", "Supported.", requires_context=True),))
    skipping = [judge(rubric_reply(), rubric=rubric), judge(rubric_reply(), rubric=rubric, name="scripted/b")]
    result = JudgeEnsemble(skipping).grade(ANSWER)
    assert result.status is JudgmentStatus.SKIPPED and not result.is_usable and result.verdicts == {}
    failing = Judge(ScriptedModel([ModelError("auth", "HTTP 401")]), retries=0)  # grades without context
    mixed = JudgeEnsemble([skipping[0], failing]).grade(ANSWER)
    assert mixed.status is JudgmentStatus.ERROR and [c.status for c in mixed.components] == [
        JudgmentStatus.SKIPPED, JudgmentStatus.ERROR]


def test_only_components_that_graded_a_dimension_vote_on_it():
    skipping = Judge(ScriptedModel(lambda r: rubric_reply(dimensions=asked_dimensions(r))), retries=0)
    grading = Judge(ScriptedModel(lambda r: rubric_reply({"groundedness": "FAIL"},
                                                         dimensions=asked_dimensions(r))),
                    retries=0, skip_context_dependent_when_missing=False)
    result = JudgeEnsemble([skipping, grading]).grade(ANSWER)
    grounded = next(d for d in result.dimensions if d.dimension == "groundedness")
    assert grounded.voters == 1 and grounded.verdict is Verdict.FAIL
    assert result.components[0].skipped == ("groundedness",)


def test_grade_many_votes_per_item_in_order():
    def reply(request):
        return rubric_reply(default="FAIL" if "bad" in request.messages[-1].content else "PASS")

    ensemble = JudgeEnsemble([Judge(ScriptedModel(reply), retries=0) for _ in range(3)])
    results = ensemble.grade_many([{"answer": f"{'bad' if i % 2 else 'fine'} {i}", "context": "c"}
                                   for i in range(10)])
    assert [r.verdicts["relevance"] for r in results] == [Verdict.FAIL if i % 2 else Verdict.PASS for i in range(10)]


def test_an_empty_ensemble_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="at least one judge"):
        JudgeEnsemble([])
