"""The demo's world: a support bot's intents over real MT-Bench questions, its simulated days and
the regression injected near the end. Everything is a function of (days, per_day, seed)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cache
from importlib import resources

from verdict.inject import CorruptionKind
from verdict.tenancy import LOCAL_TENANT

# The collector's tenant when it runs without tokens (loopback): `verdict sql` reads it by default.
TENANT = LOCAL_TENANT
MIN_DAYS = 3  # baseline (>= 1 day) + 24 h gap + 24 h current window
MIN_PER_DAY = 20  # below, a 60 % regression in one day's traffic can be too few answers to be significant


@dataclass(frozen=True)
class Question:
    question_id: int
    category: str
    text: str  # the first turn, as published


@dataclass(frozen=True)
class Intent:
    key: str  # the `verdict.intent_context` key: the daemon's cluster
    categories: tuple[str, ...]  # MT-Bench categories routed to it
    system_prompt: str


INTENTS: tuple[Intent, ...] = (
    Intent("writing-help", ("writing", "roleplay"),
           "You are the writing assistant of the help centre. Help customers draft, edit and role-play "
           "texts. Answer in complete sentences."),
    Intent("math-reasoning", ("math", "reasoning"),
           "You are the maths and logic tutor of the help centre. Explain each step of the reasoning. "
           "Answer in complete sentences."),
    Intent("coding-help", ("coding", "extraction"),
           "You are the programming and data assistant of the help centre. Put code in fenced blocks and "
           "answer in JSON when asked."),
    Intent("science-humanities", ("stem", "humanities"),
           "You are the science and humanities expert of the help centre. Give accurate, well-organised "
           "explanations."),
)
DEFAULT_CORRUPTED = "coding-help"


@dataclass(frozen=True)
class Regression:
    """From `day` on, `share` of `intent`'s answers come back corrupted with `kind` (a bad model update)."""

    intent: str
    kind: CorruptionKind
    share: float
    day: int  # 0-based simulated day


@dataclass(frozen=True)
class SupportRequest:
    intent: Intent
    question: Question
    customer: str  # sent as the OpenAI `user` field


@cache
def mt_bench() -> tuple[Question, ...]:
    """The 80 MT-Bench questions bundled in verdict_daemon/data (see the README there)."""
    path = resources.files("verdict_daemon") / "data" / "mt_bench_questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return tuple(Question(r["question_id"], r["category"], r["turns"][0]) for r in rows)


def intent(key: str) -> Intent:
    for candidate in INTENTS:
        if candidate.key == key:
            return candidate
    raise KeyError(key)


def questions_for(chosen: Intent) -> tuple[Question, ...]:
    return tuple(q for q in mt_bench() if q.category in chosen.categories)


@dataclass(frozen=True)
class Scenario:
    days: int = 9
    per_day: int = 40  # requests per intent per simulated day
    seed: int = 0
    corrupted_intent: str = DEFAULT_CORRUPTED

    def __post_init__(self) -> None:
        if self.days < MIN_DAYS:
            raise ValueError(f"days must be at least {MIN_DAYS}")
        if self.per_day < MIN_PER_DAY:
            raise ValueError(f"per_day must be at least {MIN_PER_DAY}")
        intent(self.corrupted_intent)

    @property
    def regression(self) -> Regression:
        return Regression(self.corrupted_intent, CorruptionKind.TRUNCATION, share=0.6, day=self.days - 1)

    @property
    def total_requests(self) -> int:
        return self.days * self.per_day * len(INTENTS)

    def day_traffic(self, day: int) -> list[SupportRequest]:
        """One simulated day: `per_day` requests per intent, interleaved as real traffic is."""
        rng = random.Random(f"demo-traffic:{self.seed}:{day}")
        requests = [SupportRequest(i, rng.choice(questions_for(i)), f"customer-{rng.randrange(10_000):04d}")
                    for i in INTENTS for _ in range(self.per_day)]
        rng.shuffle(requests)
        return requests
