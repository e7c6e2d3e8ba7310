"""The demo's world: traffic from the bundled MT-Bench questions, and the fake LLM's answers through
the real `openai` client (the bundled fake server from verdict_demo.fake_llm, via the fixture)."""

from __future__ import annotations

import pytest

from verdict_demo.judge import Material, completeness
from verdict_demo.llm import SupportLLM
from verdict_demo.scenario import INTENTS, Scenario, intent, mt_bench, questions_for


def test_the_bundled_mt_bench_questions_split_into_four_intents():
    questions = mt_bench()
    assert len(questions) == 80 and len({q.question_id for q in questions}) == 80
    assert sorted(len(questions_for(i)) for i in INTENTS) == [20, 20, 20, 20]
    assert {q.category for i in INTENTS for q in questions_for(i)} == {q.category for q in questions}


def test_traffic_is_a_function_of_the_seed():
    scenario = Scenario(days=3, per_day=20, seed=5)
    day = scenario.day_traffic(1)
    assert len(day) == 20 * len(INTENTS)
    assert all(r.question.category in r.intent.categories for r in day)
    assert [(r.intent.key, r.question.question_id, r.customer) for r in day] == \
        [(r.intent.key, r.question.question_id, r.customer) for r in Scenario(days=3, per_day=20, seed=5).day_traffic(1)]
    assert day != Scenario(days=3, per_day=20, seed=6).day_traffic(1)
    assert day != scenario.day_traffic(2)
    assert len({r.intent.key for r in day[:12]}) > 1  # intents interleave


@pytest.mark.parametrize(("field", "value", "message"), [
    ("days", 2, "days must be at least 3"), ("per_day", 19, "per_day must be at least 20")])
def test_a_scenario_too_small_for_drift_is_refused(field, value, message):
    with pytest.raises(ValueError, match=message):
        Scenario(**{field: value})


def _ask(client, chosen, question: str, customer: str) -> tuple[str, str]:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", user=customer, max_tokens=512,
        messages=[{"role": "system", "content": chosen.system_prompt}, {"role": "user", "content": question}])
    return reply.choices[0].message.content, reply.choices[0].finish_reason


def test_the_fake_llm_regresses_only_the_chosen_intent_once_told(fake_openai):
    scenario = Scenario(per_day=20, seed=3, corrupted_intent="math-reasoning")
    handler = fake_openai.handler = SupportLLM(scenario)
    client = fake_openai.client()
    traffic = [r for day in range(2) for r in scenario.day_traffic(day)]

    def cut_off_share(key: str) -> float:
        answers = [_ask(client, r.intent, r.question.text, r.customer) for r in traffic if r.intent.key == key]
        complete = [completeness(Material(None, None, text)).verdict == "PASS" for text, _ in answers]
        assert all(finish == "length" for (_, finish), ok in zip(answers, complete, strict=True) if not ok)
        return 1 - sum(complete) / len(complete)

    before = {i.key: cut_off_share(i.key) for i in INTENTS}
    assert all(share < 0.1 for share in before.values()), before  # the stable background of flaws
    handler.regressed = True
    after = {i.key: cut_off_share(i.key) for i in INTENTS}
    assert after["math-reasoning"] > 0.4, after  # share 0.6, minus cuts that land right after a full stop
    assert {k: v for k, v in after.items() if k != "math-reasoning"} == \
        {k: v for k, v in before.items() if k != "math-reasoning"}  # same requests, same answers
    assert handler.corrupted > 0


def test_the_same_request_gets_the_same_answer(fake_openai):
    fake_openai.handler = SupportLLM(Scenario(seed=1))
    client = fake_openai.client()
    chosen, question = intent("coding-help"), questions_for(intent("coding-help"))[0].text
    first = _ask(client, chosen, question, "customer-0001")
    assert _ask(client, chosen, question, "customer-0001") == first
    assert "```python" in first[0]  # a coding question gets a code block
