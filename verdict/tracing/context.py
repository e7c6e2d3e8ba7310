"""Per-request context the SDK stamps on spans: intent key, workload and conversation.

Both live in ContextVars, so they follow asyncio tasks (a task copies the context it was created in)
and nesting restores the outer value with the ContextVar token, also when the block raises.
Threads do not inherit ContextVars: `carry_context` carries them into executor work.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from types import TracebackType
from typing import Generic, ParamSpec, TypeVar

from verdict import semconv as sc
from verdict.conversation import validate_conversation_id
from verdict.intent import validate_intent_key

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True)
class Conversation:
    """The conversation a turn belongs to; `end`: this turn is its last (docs/conversations.md)."""

    id: str
    end: bool = False


INTENT_KEY: ContextVar[str | None] = ContextVar("verdict_intent_key", default=None)
WORKLOAD: ContextVar[str | None] = ContextVar("verdict_workload", default=None)
CONVERSATION: ContextVar[Conversation | None] = ContextVar("verdict_conversation", default=None)

# Keys repeat (one per feature); validation includes a redaction pass, so remember the valid ones.
_validated_key = functools.lru_cache(maxsize=4096)(validate_intent_key)


class _ContextBinding(Generic[T]):
    """Sets a ContextVar for the duration of a `with` block (sync or async code alike)."""

    __slots__ = ("_var", "_value", "_tokens")

    def __init__(self, var: ContextVar[T | None], value: T) -> None:
        self._var = var
        self._value = value
        self._tokens: list[Token[T | None]] = []

    def __enter__(self) -> T:
        self._tokens.append(self._var.set(self._value))
        return self._value

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Normally the last token. One binding object shared by concurrent tasks or threads
        # (`BILLING = intent_context("billing.v1")` at module level) holds tokens of several
        # contexts; resetting with another context's token raises ValueError, so find ours.
        tokens = self._tokens
        for token in reversed(tokens):
            try:
                self._var.reset(token)
            except ValueError:
                continue
            tokens.remove(token)
            return

    async def __aenter__(self) -> T:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)


def intent_context(key: str) -> _ContextBinding[str]:
    """`with intent_context("billing.v1"):` stamps `verdict.intent_key` on every LLM span inside.

    Raises ValueError at once for a key that is not a valid intent key (see `verdict.intent`).
    """
    return _ContextBinding(INTENT_KEY, _validated_key(key))


def workload_context(name: str) -> _ContextBinding[str]:
    """`with workload_context("judge"):` stamps `verdict.workload`; the daemon's judge calls use it
    so analysis can exclude them. Names follow the intent-key rules."""
    return _ContextBinding(WORKLOAD, _validated_key(name))


def conversation_context(conversation_id: str, end: bool = False) -> _ContextBinding[Conversation]:
    """`with conversation_context(chat.id):` stamps `gen_ai.conversation.id` on every span inside (Verdict's
    and other instrumentations'), so the turn's trace joins its conversation; `end=True` marks the turn as the
    conversation's last (`verdict.conversation.end`), which closes it at once instead of after the inactivity
    limit.

    Raises ValueError at once for an id that is not a valid conversation id (see `verdict.conversation`).
    """
    return _ContextBinding(CONVERSATION, Conversation(validate_conversation_id(conversation_id), bool(end)))


def conversation_attributes() -> dict[str, str | bool]:
    """The span attributes of the current `conversation_context` (none outside one)."""
    conversation = CONVERSATION.get()
    if conversation is None:
        return {}
    if conversation.end:
        return {sc.CONVERSATION_ID: conversation.id, sc.CONVERSATION_END: True}
    return {sc.CONVERSATION_ID: conversation.id}


def current_intent_key() -> str | None:
    return INTENT_KEY.get()


def current_workload() -> str | None:
    return WORKLOAD.get()


def carry_context(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap `fn` so it runs in (a copy of) the caller's current context, intent key and OTel span included.

    `executor.submit(carry_context(work), item)`: worker threads otherwise start with an empty context.
    Each call runs in its own copy, so one wrapped function may run in several threads at once.
    """
    captured = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return captured.copy().run(fn, *args, **kwargs)

    return run
