"""What the demo's bundled fake LLM answers: a `FakeOpenAI` handler.

A real model cannot run offline in two minutes, so the fake writes short template answers built
from the question's own key words (deterministic, like a model at temperature 0: same request, same
answer). Like a real model it is not perfect: about 3 % of answers, in every intent and on every day,
come back flawed (cut off, partly off-topic, or with an invented claim) — a stable background the
drift statistics must not mistake for a regression. Once `regressed` is set (the orchestrator sets
it on the scenario's regression day), `Regression.share` of the affected intent's answers are
corrupted with `CorruptionInjector` — the regression the demo's monitoring has to find.
"""

from __future__ import annotations

import json
import random
import re

from verdict.inject import CorruptionInjector, CorruptionKind
from verdict_demo.fake_llm import RecordedRequest, Reply
from verdict_demo.scenario import INTENTS, Intent, Scenario

BACKGROUND_FLAW_RATE = 0.03
BACKGROUND_FLAWS = (CorruptionKind.TRUNCATION, CorruptionKind.OFF_TOPIC, CorruptionKind.HALLUCINATION)
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")
# Words a template answer should not echo: function words and the imperative verbs questions open with.
_SKIP = frozenset(re.findall(r"[a-z]+", """
about after also among another because been before being between both could does each either every
from have here into just more most much only other over same should some such than that their them
then there these they this those through under until very what when where which while will with
would your please following given like make sure answer compose draft imagine describe write develop
implement explain provide create suggest share identify extract evaluate analyze analyse consider
craft embrace pretend picture suppose read edit discuss list help tell using find return output
"""))
_FALLBACK_TERMS = ("the main idea", "each step", "the details", "the result", "a quick check")
_CODE_WORDS = ("program", "function", "implement", "code", "website", "bug")

_OPENERS = ("Happy to help with {a} and {b}.", "Here is a clear way to approach {a}, keeping {b} in mind.",
            "Good question: the key points are {a} and {b}.")
_POINTS = ("Start with {t}: it frames everything else.", "Look closely at {t}, since most of the answer depends on it.",
           "Then bring in {t} and check that it fits with the rest.", "Keep {t} concrete, with one short example.",
           "Make sure {t} is addressed explicitly rather than implied.")
_CLOSERS = ("Let me know if you would like more detail on {a}.", "That covers {a}; I can expand any step if needed.",
            "I hope this helps with {a}.")
_CODE = '''```python
def solve(items):
    """{summary}"""
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen
```'''


def terms_of(question: str, count: int = 5) -> list[str]:
    """The question's first `count` distinctive words, repeated when it has fewer (every sentence of the
    answer then names one); generic words only for a question without any."""
    found: list[str] = []
    for word in _WORD.findall(question):
        if word.lower() not in _SKIP and word.lower() not in (w.lower() for w in found):
            found.append(word)
    found = found or list(_FALLBACK_TERMS)
    return [found[i % len(found)] for i in range(count)]


def compose_answer(question: str, chosen: Intent | None, rng: random.Random) -> str:
    """A short, well-formed answer that addresses the question's terms (JSON when asked for JSON)."""
    a, b, c, d, e = terms_of(question)
    points = [p.format(t=t) for p, t in zip(rng.sample(_POINTS, 3), (c, d, e), strict=True)]
    if "json" in question.lower():
        return json.dumps({"summary": f"The answer organises {a} around {b}.", "points": points}, indent=2)
    parts = [rng.choice(_OPENERS).format(a=a, b=b), "\n".join(f"{i}. {p}" for i, p in enumerate(points, 1))]
    if chosen is not None and chosen.key == "coding-help" and any(w in question.lower() for w in _CODE_WORDS):
        parts.append(_CODE.format(summary=f"Collect the {c} in order, without repeats."))
    parts.append(rng.choice(_CLOSERS).format(a=a))
    return "\n\n".join(parts)


class SupportLLM:
    """`FakeOpenAI.handler` for the demo: answers chat completions from the scenario's intents."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.regressed = False  # flipped by the orchestrator on the regression day
        self.corrupted = 0  # answers corrupted by the regression so far
        self._injector = CorruptionInjector(seed=scenario.seed)
        self._by_prompt = {i.system_prompt: i for i in INTENTS}

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.body.get("messages") or []
        system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
        question = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "") or ""
        chosen = self._by_prompt.get(system) if isinstance(system, str) else None  # content may be a list of parts
        key = f"{request.body.get('user')}|{question}"
        rng = random.Random(f"demo-llm:{self.scenario.seed}:{key}")
        text = compose_answer(question, chosen, rng)
        regression = self.scenario.regression
        kind = None
        if self.regressed and chosen is not None and chosen.key == regression.intent and rng.random() < regression.share:
            kind = regression.kind
            self.corrupted += 1
        elif rng.random() < BACKGROUND_FLAW_RATE:
            kind = rng.choice(BACKGROUND_FLAWS)
        if kind is not None:
            text = self._injector.corrupt(text, kind, rng.uniform(0.4, 0.8), query=question, key=key).corrupted
        # A cut-off answer is what hitting the token limit looks like: finish_reason "length".
        return Reply(text, finish_reason="length" if kind is CorruptionKind.TRUNCATION else None)
