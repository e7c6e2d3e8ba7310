"""A unit rejecting a reply against its input is retried like an extraction failure; each row reports the
attempt that produced every unit's result."""

import threading
from collections import Counter

from verdict.graph import ExtractionError, Layer, Pipeline, Schema, Unit, UnitError
from verdict.models.base import ModelError
from verdict.models.scripted import ScriptedModel
from verdict.transform import MapUnit


class Quote(Schema):
    quote: str


class Passage(Schema):
    text: str


class QuoteUnit(Unit):
    """Accepts a reply only if its quote occurs in the input's text (what the unit was asked about)."""

    ResponseSchema = Quote

    def process(self, input, response):
        if response.quote not in input.text:
            raise ExtractionError(f"{response.quote!r} is not in the text")
        return response


def quote_unit(**via):
    unit = QuoteUnit().prompt("Quote from: {input.text}")
    return unit.via(**via) if via else unit


def reply(quote):
    return f'{{"quote": "{quote}"}}'


def test_a_rejected_reply_is_retried_and_the_successful_attempt_is_reported():
    model = ScriptedModel([reply("absent"), reply("also absent"), reply("brown fox")], record=True)
    row = (Pipeline() >> quote_unit(model=model, retries=3)).run({"text": "the quick brown fox"})
    assert row.ok and row.output.quote == "brown fox"
    assert row.attempts == {"quote": 3} and model.calls == 3
    assert row.usage.output_tokens == 2 + 3 + 3  # every rejected attempt is paid for too


def test_rejection_on_the_last_attempt_is_an_extraction_error_with_the_units_message():
    model = ScriptedModel([reply("absent")])
    unit = quote_unit(model=model, retries=2)
    after = MapUnit(lambda previous: {"n": 1})
    row = (Pipeline() >> unit >> after).run({"text": "the quick brown fox"})
    error = row["quote"]
    assert isinstance(error, UnitError) and error.kind == "extraction" and error.attempts == 3
    assert error.message == "'absent' is not in the text" and model.calls == 3
    assert row.attempts == {"quote": 3, "map": 0}  # the downstream unit never ran a model
    assert row.error == "quote: extraction: 'absent' is not in the text after 3 attempt(s)"


def test_the_rejection_reads_the_units_input_not_the_source():
    writer = type("WriterUnit", (Unit,), {"ResponseSchema": Passage})().prompt("Write about {source.topic}")
    model = ScriptedModel(lambda r: '{"text": "a fox"}' if r.messages[0].content.startswith("Write") else
                          reply("fox"))
    row = (Pipeline() >> writer >> quote_unit()).via(model, retries=0).run({"topic": "fox", "text": "no match"})
    assert row.ok and row["quote"].quote == "fox"  # checked against the writer's text, not source.text


def test_other_exceptions_from_process_are_unit_errors_without_retry():
    class BrokenUnit(QuoteUnit):
        def process(self, input, response):
            raise KeyError("bug")

    model = ScriptedModel([reply("x")])
    row = (Pipeline() >> BrokenUnit().prompt("{source.text}").via(model, retries=3)).run({"text": "x"})
    assert row.output == UnitError("unit", "KeyError: 'bug'", 1) and model.calls == 1
    assert row.attempts == {"broken": 1}


def test_a_propagate_rejection_is_retried_too():
    def only_long(unit, previous, input, output):
        if len(output.quote) < 5:
            raise ExtractionError("quote too short")
        return output

    model = ScriptedModel([reply("fox"), reply("brown fox")])
    row = (Pipeline() >> quote_unit(model=model).propagate(only_long)).run({"text": "the quick brown fox"})
    assert row.output.quote == "brown fox" and row.attempts == {"quote": 2}


def test_attempts_mirror_outputs_for_model_errors_cpu_units_and_pins():
    class PlainUnit(Unit):
        ResponseSchema = Quote

    pinned_model = ScriptedModel(["not json", reply("rubric")])
    pinned = PlainUnit(name="pinned").prompt("Write a rubric").via(pinned_model, retries=1).pin()
    down = ScriptedModel([ModelError("auth", "HTTP 401")])
    working = PlainUnit(name="up").prompt("{source.text}").via(ScriptedModel([reply("fox")]))
    failing = PlainUnit(name="down").prompt("{source.text}").via(down, retries=3)
    pool = MapUnit(lambda previous: {"n": len(list(previous))})
    rows = (Pipeline() >> pinned >> Layer([working, failing]) >> pool) \
        .run_from_dataset([{"text": "fox"}, {"text": "a fox"}])
    for row in rows:
        assert list(row.attempts) == list(row.outputs)
        assert row.attempts == {"pinned": 2, "layer.up": 1, "layer.down": 1, "map": 0}
        assert row["layer.down"].attempts == 1 and row["map"].kind == "upstream"
    assert pinned_model.calls == 2 and down.calls == 2  # the pin ran once; the 401 was not retried


def test_attempts_are_per_sample_under_concurrency():
    # Sample i is answered correctly only on its (i % 4 + 1)-th attempt; samples run on 8 threads at once.
    calls: Counter[int] = Counter()
    lock = threading.Lock()

    def answer(request):
        text = request.messages[0].content.removeprefix("Quote from: ")
        with lock:
            calls[text] += 1
            attempt = calls[text]
        return reply(text if attempt == int(text.split()[1]) % 4 + 1 else "wrong")

    model = ScriptedModel(answer, latency=0.001)
    rows = (Pipeline() >> quote_unit(model=model, retries=3)).run_from_dataset(
        [{"text": f"sample {i}"} for i in range(60)], max_workers=8)
    assert not rows.failed
    assert [row.attempts["quote"] for row in rows] == [i % 4 + 1 for i in range(60)]
    assert model.calls == sum(i % 4 + 1 for i in range(60))
