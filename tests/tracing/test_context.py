"""intent_context / workload_context: validation, nesting, exceptions, asyncio tasks, executor threads."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from verdict.intent import validate_intent_key
from verdict.tracing import (
    carry_context,
    current_intent_key,
    current_workload,
    intent_context,
    workload_context,
)


@pytest.mark.parametrize("key", ["billing.v1", "a", "A9:b-c_d.e", "x" * 64, "2fa.reset"])
def test_valid_keys(key):
    assert validate_intent_key(key) == key


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("", "must not be empty"),
        ("x" * 65, "limit is 64"),
        ("jane.doe@example.com", "e-mail"),
        ("-billing", "starting with a letter or digit"),
        ("billing v1", "use letters"),
        ("billing/v1", "use letters"),
        ("sk-proj-abcDEF1234567890abcdefGHIJ1234567890", "redaction"),
        ("192.168.10.20", "redaction"),
        (42, "must be a string"),
    ],
)
def test_invalid_keys_say_why(key, reason):
    with pytest.raises(ValueError, match=reason):
        validate_intent_key(key)
    with pytest.raises(ValueError, match=reason):
        intent_context(key)


def test_nesting_restores_outer_key_also_on_exception():
    assert current_intent_key() is None
    with intent_context("outer"):
        with pytest.raises(RuntimeError), intent_context("inner"):
            assert current_intent_key() == "inner"
            raise RuntimeError("boom")
        assert current_intent_key() == "outer"
        with intent_context("inner2"):
            assert current_intent_key() == "inner2"
        assert current_intent_key() == "outer"
    assert current_intent_key() is None


def test_workload_context():
    with workload_context("judge"):
        assert current_workload() == "judge"
        with intent_context("x.v1"):
            assert (current_intent_key(), current_workload()) == ("x.v1", "judge")
    assert current_workload() is None


def test_asyncio_tasks_keep_their_own_key():
    async def worker(key: str) -> list[str | None]:
        seen = []
        with intent_context(key):
            for _ in range(3):
                await asyncio.sleep(0)
                seen.append(current_intent_key())
        seen.append(current_intent_key())
        return seen

    async def main():
        async with intent_context("parent"):
            results = await asyncio.gather(worker("a"), worker("b"), worker("c"))
            inherited = await asyncio.create_task(_read())
            return results, inherited, current_intent_key()

    results, inherited, after = asyncio.run(main())
    assert results == [["a", "a", "a", "parent"], ["b", "b", "b", "parent"], ["c", "c", "c", "parent"]]
    assert inherited == "parent"
    assert after == "parent"


async def _read() -> str | None:
    return current_intent_key()


def test_carry_context_into_thread_pool():
    with ThreadPoolExecutor(max_workers=2) as pool, intent_context("batch.v2"):
        plain = pool.submit(current_intent_key).result()
        carried = [f.result() for f in [pool.submit(carry_context(current_intent_key)) for _ in range(4)]]
    assert plain is None
    assert carried == ["batch.v2"] * 4


def test_intent_and_workload_on_spans(fake_openai, traced):
    client = fake_openai.client()
    with intent_context("billing.v1"), workload_context("judge"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    client.chat.completions.create(model="plain", messages=[{"role": "user", "content": "x"}])
    spans = {s.name: s.attributes for s in traced.spans()}
    assert spans["chat m"]["verdict.intent_key"] == "billing.v1"
    assert spans["chat m"]["verdict.workload"] == "judge"
    assert "verdict.intent_key" not in spans["chat plain"]


def test_intent_follows_async_calls(fake_openai, traced):
    async def main():
        client = fake_openai.async_client()

        async def one(key):
            with intent_context(key):
                await client.chat.completions.create(model=key, messages=[{"role": "user", "content": "x"}])

        await asyncio.gather(*(one(k) for k in ("k1", "k2", "k3")))

    asyncio.run(main())
    assert {s.attributes["gen_ai.request.model"]: s.attributes["verdict.intent_key"] for s in traced.spans()} == {
        "k1": "k1", "k2": "k2", "k3": "k3"}


def test_one_binding_shared_by_concurrent_tasks_and_threads():
    billing = intent_context("billing.v1")  # apps keep one at module level and reuse it

    async def task(delay: int) -> list[str | None]:
        with billing:
            for _ in range(delay):
                await asyncio.sleep(0)
            inside = current_intent_key()
        return [inside, current_intent_key()]

    async def main():
        # Enter in order a, b; exit in order a, b: each exit must reset its own task's token.
        return await asyncio.gather(task(1), task(3))

    assert asyncio.run(main()) == [["billing.v1", None], ["billing.v1", None]]

    def thread_work(_: int) -> tuple[str | None, str | None]:
        with billing:
            inside = current_intent_key()
        return inside, current_intent_key()

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert set(pool.map(thread_work, range(200))) == {("billing.v1", None)}
    with billing, billing:  # re-entered in one context: innermost first
        assert current_intent_key() == "billing.v1"
    assert current_intent_key() is None
