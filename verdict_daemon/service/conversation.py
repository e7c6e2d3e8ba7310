"""A closed conversation as a judged unit (docs/conversations.md, "Conversations judged as a whole").

The sampler stores each picked closed conversation as a `sampled_traces` row of unit `conversation` whose
trace id is the unit's id, `conversation:<first trace id>` (its first turn's trace identifies a conversation for
good, and the prefix keeps it apart from the turn rows of the same traces), with its turns' graded texts (each
turn's user message and answer, redacted as stored) in `history` under the key `conversation`. Everything that
reads judgments by sampled row (drift per intent, the report, alerts, review, export) then reads conversation
evaluators' results as it reads any other's. A conversation evaluator shows the judge the turns in order within
its `[conversations] conversation_tokens` budget, the oldest dropped first (the judge is told how many).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verdict_daemon.service.history import CHARS_PER_TOKEN, Turn, newest_within, turns_text

# The units and the unit id rule live with the rows they name (the store's SQL reads them too).
from verdict_daemon.store.samples import CONVERSATION, TURN, UNIT_PREFIX, judged_trace, unit_id

__all__ = ["CONVERSATION", "TURN", "UNIT_PREFIX", "Transcript", "conversation_fingerprint", "judged_trace", "unit_id"]


@dataclass(frozen=True)
class Transcript:
    """A closed conversation's turns as sampled: every turn with text, oldest first."""

    conversation_id: str
    conversation_seq: int
    turn_count: int  # the conversation's turns, shown or not
    turns: tuple[Turn, ...]

    @property
    def omitted(self) -> int:
        """Turns not shown: over the budget, or without text."""
        return self.turn_count - len(self.turns)

    def within(self, budget_tokens: int) -> Transcript:
        """The newest turns whose tokens fit the budget together (the oldest are dropped); when not even the newest
        fits, the newest cut to the budget (a conversation with text is never shown as none)."""
        kept = newest_within(self.turns, budget_tokens)
        if not kept and self.turns:
            kept = (_cut(self.turns[-1], budget_tokens * CHARS_PER_TOKEN),)
        return Transcript(self.conversation_id, self.conversation_seq, self.turn_count, kept)

    def text(self) -> str:
        """The conversation as the judge reads it."""
        return turns_text(self.turns, self.omitted)

    def to_dict(self) -> dict[str, Any]:
        return {"conversation_id": self.conversation_id, "conversation_seq": self.conversation_seq,
                "turn_count": self.turn_count,
                "turns": [{"turn": t.turn, "query": t.query, "response": t.response} for t in self.turns]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transcript:
        return cls(data["conversation_id"], data["conversation_seq"], data["turn_count"],
                   tuple(Turn(t["turn"], t["query"], t["response"]) for t in data["turns"]))


def _cut(turn: Turn, chars: int) -> Turn:
    """A turn whose user message and answer are cut to half of `chars` each ("…" marks a cut)."""
    half = max(chars // 2, 1)
    return Turn(turn.turn, *(text if len(text) <= half else text[:half - 1] + "…" for text in (turn.query, turn.response)))


def conversation_fingerprint(fingerprint: str, budget_tokens: int) -> str:
    """A conversation evaluator's fingerprint: its judge's, under the budget of the conversation shown (results
    under another budget are never pooled with these)."""
    from verdict.judges.fingerprint import combined_fingerprint

    return combined_fingerprint("conversation-unit", [fingerprint],
                                {"conversation_tokens": budget_tokens, "chars_per_token": CHARS_PER_TOKEN})
