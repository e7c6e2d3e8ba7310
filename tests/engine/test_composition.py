"""`>>`, Layer (repeat, unravelling, inner/outer link modes), Block, `.via()` inheritance and unit paths."""

import json
import threading
import time

import pytest

from verdict.graph import Block, ConfigurationError, Layer, Pipeline, Schema, Unit
from verdict.judges import JudgeUnit
from verdict.models.scripted import ScriptedModel
from verdict.transform import MapUnit, MeanPoolUnit

MODEL = ScriptedModel(['{"score": 3}'])


class Note(Schema):
    text: str


class NoteUnit(Unit):
    ResponseSchema = Note


def note(name: str) -> NoteUnit:
    return NoteUnit(name=name).prompt("{source.q}")


def deps(pipeline: Pipeline) -> dict[str, tuple[str, ...]]:
    return {n.path: n.dep_paths for n in pipeline.build().nodes}


def test_layer_repeat_and_dense_default():
    pipeline = (Pipeline() >> Layer(JudgeUnit(), 3) >> MeanPoolUnit("score")).via(MODEL)
    assert deps(pipeline) == {
        "layer.judge[0]": (), "layer.judge[1]": (), "layer.judge[2]": (),
        "meanpool": ("layer.judge[0]", "layer.judge[1]", "layer.judge[2]"),
    }


def test_dense_between_layers():
    pipeline = (Pipeline() >> Layer(note("a"), 2) >> Layer(note("b"), 2)).via(MODEL)
    graph = deps(pipeline)
    assert graph["layer[1].b[0]"] == graph["layer[1].b[1]"] == ("layer[0].a[0]", "layer[0].a[1]")


def test_broadcast_cumulative_last():
    broadcast = Pipeline() >> Layer(note("a"), 3, outer="broadcast") >> Layer(note("b"), 3)
    assert [deps(broadcast.via(MODEL))[f"layer[1].b[{i}]"] for i in range(3)] == \
        [("layer[0].a[0]",), ("layer[0].a[1]",), ("layer[0].a[2]",)]
    cumulative = Pipeline() >> Layer(note("a"), 3, outer="cumulative") >> Layer(note("b"), 3)
    assert [len(deps(cumulative.via(MODEL))[f"layer[1].b[{i}]"]) for i in range(3)] == [1, 2, 3]
    last = Pipeline() >> Layer(note("a"), 3, outer="last") >> Layer(note("b"), 2)
    assert {deps(last.via(MODEL))[f"layer[1].b[{i}]"] for i in range(2)} == {("layer[0].a[2]",)}


def test_broadcast_that_does_not_fit_raises():
    with pytest.raises(ConfigurationError, match="3 leaves .* and 2 roots"):
        Layer(note("a"), 3, outer="broadcast") >> Layer(note("b"), 2)


def test_inner_chain_and_list_unravelling():
    pipeline = Pipeline() >> Layer([note("pro"), note("con")], 2, inner="chain") >> note("judge")
    graph = deps(pipeline.via(MODEL))
    assert graph["layer.pro[0]"] == ()
    assert graph["layer.con[0]"] == ("layer.pro[0]",)
    assert graph["layer.pro[1]"] == ("layer.con[0]",)
    assert graph["judge"] == ("layer.pro[0]", "layer.con[0]", "layer.pro[1]", "layer.con[1]")


def test_named_block_paths_and_layer_of_blocks():
    debate = Block("debate") >> note("pro") >> note("con")
    pipeline = Pipeline() >> Layer(debate, 2) >> note("judge")
    graph = deps(pipeline.via(MODEL))
    assert graph["layer.debate[1].con"] == ("layer.debate[1].pro",)
    assert graph["judge"] == ("layer.debate[0].con", "layer.debate[1].con")


def test_arbitrary_dag_with_rshift():
    root, left, right, join = note("root"), note("left"), note("right"), note("join")
    root >> left >> join
    root >> right >> join
    graph = deps((Pipeline() >> root).via(MODEL))
    assert graph == {"root": (), "left": ("root",), "right": ("root",), "join": ("left", "right")}


def test_cycle_is_rejected():
    a, b = note("a"), note("b")
    a >> b
    b >> a
    with pytest.raises(ConfigurationError, match="cycle"):
        (Pipeline() >> a).via(MODEL).build()


def test_via_on_containers_applies_to_members_without_their_own():
    outer = ScriptedModel(['{"text": "outer"}'], name="scripted/outer")
    inner = ScriptedModel(['{"text": "inner"}'], name="scripted/inner")
    own = ScriptedModel(['{"text": "own"}'], name="scripted/own")
    pipeline = (Pipeline() >> Layer([note("a"), note("b").via(own)]).via(inner) >> note("c")).via(outer)
    row = pipeline.run({"q": "?"})
    assert [row[p].text for p in ("layer.a", "layer.b", "c")] == ["inner", "own", "outer"]

    # a Block's model reaches its members, also through the Layer that repeats it
    block_model = ScriptedModel(['{"text": "block"}'], name="scripted/block")
    debate = (Block("debate") >> note("pro") >> note("con").via(own)).via(block_model)
    row = (Pipeline() >> Layer(debate, 2) >> note("judge")).via(outer).run({"q": "?"})
    assert [row[p].text for p in ("layer.debate[1].pro", "layer.debate[1].con", "judge")] == [
        "block", "own", "outer"]


def test_unit_without_model_fails_at_build():
    with pytest.raises(ConfigurationError, match="layer.judge\\[0\\]: no model"):
        (Pipeline() >> Layer(JudgeUnit(), 2)).build()


def test_unknown_model_string_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="unknown model 'nowhere/x'"):
        JudgeUnit().via("nowhere/x")


def test_multi_dependency_unit_sees_all_dependencies_not_the_last_finished():
    def reply(request):
        text = request.messages[0].content
        if text.startswith("slow"):
            time.sleep(0.05)
        return json.dumps({"text": text.split()[0]})

    model = ScriptedModel(reply)
    slow = NoteUnit(name="slow").prompt("slow {source.q}")
    fast = NoteUnit(name="fast").prompt("fast {source.q}")
    both = MapUnit(lambda previous: {"seen": [p.text for p in previous]})
    row = (Pipeline() >> Layer([slow, fast]) >> both).via(model).run({"q": "?"})
    assert row["map"].seen == ["slow", "fast"]


def test_cpu_units_run_on_their_own_executor():
    threads = {}

    def record(previous):
        threads["map"] = threading.current_thread().name
        return {"n": len(previous)}

    def reply(request):
        threads["model"] = threading.current_thread().name
        return '{"score": 2}'

    row = (Pipeline() >> Layer(JudgeUnit(), 2) >> MapUnit(record)).via(ScriptedModel(reply)).run({"q": 1})
    assert row["map"].n == 2
    assert threads["model"].startswith("verdict-io") and threads["map"].startswith("verdict-cpu")


def test_pools():
    from verdict.transform import MajorityPoolUnit, MaxPoolUnit

    model = ScriptedModel(['{"score": 2}', '{"score": 5}', '{"score": 2}'])
    for pool, expected in [(MeanPoolUnit(), 3.0), (MaxPoolUnit(), 5), (MajorityPoolUnit(), 2)]:
        row = (Pipeline() >> Layer(JudgeUnit(), 3) >> pool).via(model).run({"q": 1}, max_workers=1)
        assert row.output.score == expected, pool


def test_pool_of_missing_field_fails_at_build():
    with pytest.raises(ConfigurationError, match="MeanPoolUnit pools \\['rating'\\]"):
        (Pipeline() >> Layer(JudgeUnit(), 2) >> MeanPoolUnit("rating")).via(MODEL).build()


def test_named_layer_segment_and_leftover_units_join_the_top_level():
    jury = Layer(JudgeUnit(), 2, name="jury")
    pipeline = (Pipeline() >> jury >> MeanPoolUnit()).via(MODEL)
    extra = note("audit")
    pipeline.members[-1] >> extra  # linked after the pipeline was assembled, outside any container
    assert list(deps(pipeline)) == ["jury.judge[0]", "jury.judge[1]", "meanpool", "audit"]
