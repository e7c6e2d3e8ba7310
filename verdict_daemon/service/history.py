"""The conversation so far of a judged turn: its conversation's earlier turns, within a token budget.

A sampled trace that is a turn of a conversation (docs/conversations.md) is judged with the turns before it:
each earlier turn's user message and answer (the graded texts of its last model call, redacted as stored), oldest
first. The budget `[conversations] history_tokens` bounds them; tokens are estimated as characters / 4 (no
tokenizer: judge models differ, and an estimate bounds the prompt as well as a count would). Whole turns only,
newest kept: the oldest are dropped first, and the judge is told how many were left out. The sampler stores the
history within the budget of its run; the evaluator applies its own budget again, so a lowered budget holds for
traces sampled before it (a raised one, for traces sampled after).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4  # the estimate of a turn's tokens: its rendered characters / 4, rounded up


@dataclass(frozen=True)
class Turn:
    """One earlier turn: its number in the conversation, the user's message and the answer."""

    turn: int
    query: str
    response: str

    def text(self) -> str:
        return f"[turn {self.turn}] user: {self.query}\n[turn {self.turn}] assistant: {self.response}"

    def tokens(self) -> int:
        return -(-len(self.text()) // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class History:
    """Where the judged trace sits in its conversation, and the earlier turns shown to the judge."""

    conversation_id: str
    conversation_seq: int
    turn: int  # the judged trace's turn: 1 has no history
    turns: tuple[Turn, ...] = ()  # earlier turns shown, oldest first

    @property
    def omitted(self) -> int:
        """Earlier turns not shown: over the budget, without content, or before the sampler's lookback."""
        return self.turn - 1 - len(self.turns)

    def within(self, budget_tokens: int) -> History:
        """The newest earlier turns whose tokens fit the budget together (the older ones are dropped)."""
        return History(self.conversation_id, self.conversation_seq, self.turn, newest_within(self.turns, budget_tokens))

    def text(self) -> str:
        """The conversation so far as the judge reads it ("" for a first turn)."""
        return turns_text(self.turns, self.omitted)

    def to_dict(self) -> dict[str, Any]:
        return {"conversation_id": self.conversation_id, "conversation_seq": self.conversation_seq, "turn": self.turn,
                "turns": [{"turn": t.turn, "query": t.query, "response": t.response} for t in self.turns]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> History:
        """A stored history (written by `to_dict`; material.read_background)."""
        return cls(data["conversation_id"], data["conversation_seq"], data["turn"],
                   tuple(Turn(t["turn"], t["query"], t["response"]) for t in data["turns"]))


def newest_within(turns: tuple[Turn, ...], budget_tokens: int) -> tuple[Turn, ...]:
    """The newest of `turns` (oldest first) whose tokens fit the budget together; the older ones are dropped."""
    kept: list[Turn] = []
    used = 0
    for turn in reversed(turns):
        used += turn.tokens()
        if used > budget_tokens:
            break
        kept.append(turn)
    return tuple(reversed(kept))


def turns_text(turns: tuple[Turn, ...], omitted: int) -> str:
    """Turns as a judge reads them, after a line saying how many earlier turns are not shown ("" for none)."""
    lines = [f"({omitted} earlier turn{'s' if omitted != 1 else ''} not shown)"] if omitted else []
    return "\n".join(lines + [t.text() for t in turns])


def most_turns(budget_tokens: int) -> int:
    """How many earlier turns a budget can hold at most (each costs at least an empty turn's tokens): the sampler
    reads no more than these."""
    return budget_tokens // Turn(1, "", "").tokens()


def history_fingerprint(fingerprint: str, budget_tokens: int) -> str:
    """An evaluator's fingerprint under a history budget: the policy changes what the judge reads, so results
    under another budget are never pooled with these. A budget of 0 (history off) leaves it as it was."""
    if budget_tokens == 0:
        return fingerprint
    from verdict.judges.fingerprint import combined_fingerprint

    return combined_fingerprint("conversation-history", [fingerprint],
                                {"history_tokens": budget_tokens, "chars_per_token": CHARS_PER_TOKEN})
