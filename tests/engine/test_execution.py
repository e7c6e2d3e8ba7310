"""Running datasets: order, one row per input, error rows, usage, progress, intermediate addressing."""

import json
import random
import time

import pytest

from verdict.graph import Layer, Pipeline, UnitError
from verdict.judges import JudgeUnit
from verdict.models.base import ModelError
from verdict.models.scripted import ScriptedModel
from verdict.scale import DiscreteScale
from verdict.transform import MapUnit, MeanPoolUnit


def bench_pipeline(model):
    return (Pipeline() >> Layer(JudgeUnit(DiscreteScale((1, 5))), 3) >> MeanPoolUnit("score")).via(model)


def echo_score(request):
    """Score = the sample id mod 5 + 1, so every row can be checked against its own input."""
    sample_id = int(request.messages[-1].content.split("id: ")[1].split()[0])
    return json.dumps({"score": sample_id % 5 + 1})


def test_ten_thousand_samples_no_drop_no_duplicate():
    model = ScriptedModel(echo_score)
    rows = bench_pipeline(model).run_from_dataset(({"id": i} for i in range(10_000)), max_workers=64)
    assert len(rows) == 10_000 and model.calls == 30_000
    assert [r.index for r in rows] == list(range(10_000))
    assert all(r.source["id"] == r.index and r.output.score == r.index % 5 + 1 for r in rows)
    assert not rows.failed


def test_results_keep_input_order_under_random_latency():
    rng = random.Random(7)

    def slow_echo(request):
        time.sleep(rng.random() * 0.01)
        return echo_score(request)

    rows = bench_pipeline(ScriptedModel(slow_echo)).run_from_dataset([{"id": i} for i in range(200)],
                                                                     max_workers=32)
    assert [r.output.score for r in rows] == [i % 5 + 1 for i in range(200)]


def test_failing_samples_do_not_abort_others_and_say_why():
    def flaky(request):
        sample_id = int(request.messages[-1].content.split("id: ")[1].split()[0])
        if sample_id % 10 == 3:
            return ModelError("bad_request", "context too long")
        return echo_score(request)

    rows = bench_pipeline(ScriptedModel(flaky)).run_from_dataset([{"id": i} for i in range(100)])
    failed = [r.index for r in rows.failed]
    assert failed == list(range(3, 100, 10))
    row = rows[13]
    assert row.error.startswith("layer.judge[0]: model: bad_request: context too long")
    assert row["meanpool"].kind == "upstream" and isinstance(row["layer.judge[2]"], UnitError)
    assert rows[14].output.score == 14 % 5 + 1


def test_a_raising_map_function_is_an_error_row():
    def boom(previous):
        raise ZeroDivisionError("nope")

    row = (Pipeline() >> JudgeUnit() >> MapUnit(boom)).via(ScriptedModel(['{"score": 2}'])).run({"q": 1})
    assert row.error == "map: unit: ZeroDivisionError: nope" and row["judge"].score == 2


def test_bad_sample_type_gets_an_error_row():
    rows = bench_pipeline(ScriptedModel(['{"score": 2}'])).run_from_dataset([{"id": 0}, 42, {"id": 2}])
    assert len(rows) == 3 and rows[0].ok and rows[2].ok
    assert rows[1].error == "a sample is a mapping or an object with attributes, not int"


def test_intermediate_outputs_addressable_by_path_and_unique_name():
    row = bench_pipeline(ScriptedModel(['{"score": 1}', '{"score": 2}', '{"score": 3}'])).run({"id": 0},
                                                                                             max_workers=1)
    assert list(row.outputs) == ["layer.judge[0]", "layer.judge[1]", "layer.judge[2]", "meanpool"]
    assert [row[f"layer.judge[{i}]"].score for i in range(3)] == [1, 2, 3]
    assert row["meanpool"].score == row.output.score == 2.0
    with pytest.raises(KeyError, match="ambiguous name"):
        row["judge"]
    with pytest.raises(KeyError, match="no unit at path 'nope'"):
        row["nope"]


def test_usage_is_summed_per_run():
    model = ScriptedModel(['{"score": 4}'], price_per_million=(2.0, 10.0))
    rows = bench_pipeline(model).run_from_dataset([{"id": i} for i in range(10)])
    per_row = rows[0].usage
    assert per_row.output_tokens == 3 * 2 and per_row.input_tokens > 0  # 3 calls, 2 words per reply
    assert rows.usage.input_tokens == 10 * per_row.input_tokens
    assert rows.usage.cost_usd == pytest.approx(10 * (per_row.input_tokens * 2 + 6 * 10) / 1e6)


def test_progress_callback_and_tqdm_bar(capsys):
    ticks: list[float] = []
    bench_pipeline(ScriptedModel(['{"score": 4}'])).run_from_dataset([{"id": i} for i in range(25)],
                                                                     progress=ticks.append)
    assert sum(ticks) == 25 and ticks[-1] == 0
    bench_pipeline(ScriptedModel(['{"score": 4}'])).run_from_dataset([{"id": i} for i in range(5)], progress=True)
    assert "5/5" in capsys.readouterr().err


def test_objects_and_pydantic_samples_work_as_sources():
    from pydantic import BaseModel

    class Sample(BaseModel):
        id: int

    model = ScriptedModel(['{"score": 4}'], record=True)
    unit = JudgeUnit().prompt("{source.id}")
    rows = (Pipeline() >> unit).via(model).run_from_dataset([Sample(id=5)])
    assert rows[0].ok and model.requests[0].messages[0].content == "5"


def test_empty_dataset_and_failing_iterator():
    model = ScriptedModel(['{"score": 4}'])
    assert len(bench_pipeline(model).run_from_dataset([])) == 0

    def broken():
        yield {"id": 0}
        raise OSError("dataset file vanished")

    with pytest.raises(OSError, match="dataset file vanished"):
        bench_pipeline(model).run_from_dataset(broken())


def test_worker_threads_see_the_callers_context_variables():
    """A unit's model call runs on a pool thread but inside the caller's context (e.g. the daemon's
    `workload_context("judge")`), so instrumentation sees where the call came from."""
    import contextvars

    from verdict.graph import Layer, Pipeline
    from verdict.judges import JudgeUnit
    from verdict.models.scripted import ScriptedModel

    marker = contextvars.ContextVar("marker", default="unset")
    seen: list[str] = []

    def reply(request):
        seen.append(marker.get())
        return '{"score": 3}'

    token = marker.set("caller")
    try:
        rows = (Pipeline() >> Layer(JudgeUnit(), 2)).via(ScriptedModel(reply)).run_from_dataset(
            [{"a": i} for i in range(20)], max_workers=4)
    finally:
        marker.reset(token)
    assert len(rows) == 20 and not rows.failed
    assert seen and set(seen) == {"caller"}
