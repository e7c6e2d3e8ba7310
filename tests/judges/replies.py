"""Scripted judge replies for the judge tests: rubric JSON and pairwise rounds keyed by what was shown."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from verdict.judges.rubric import DEFAULT_RUBRIC
from verdict.models.base import ModelRequest
from verdict.models.scripted import Reply

ALL = DEFAULT_RUBRIC.dimension_names


def rubric_reply(verdicts: Mapping[str, str] | None = None, *, evidence: Mapping[str, list[str]] | None = None,
                 dimensions: tuple[str, ...] = ALL, default: str = "PASS") -> str:
    """A well-formed rubric reply: every dimension PASS unless `verdicts` says otherwise."""
    verdicts = verdicts or {}
    evidence = evidence or {}
    return json.dumps({d: {"rationale": f"because of {d}", "evidence": evidence.get(d, []),
                           "verdict": verdicts.get(d, default)} for d in dimensions})


def _material(request: ModelRequest, tag: str) -> str:
    """The message showing the material (a retry appends the rejected reply and a repair request after it)."""
    return next(m.content for m in reversed(request.messages) if m.role == "user" and f"<{tag}>" in m.content)


def graded_answer(request: ModelRequest) -> str:
    """The answer the judge was shown (between <answer> tags)."""
    return _material(request, "answer").removeprefix("<answer>\n").removesuffix("\n</answer>")


def asked_dimensions(request: ModelRequest) -> tuple[str, ...]:
    """The dimensions the prompt asks for, in rubric order."""
    system = request.messages[0].content
    return tuple(d for d in ALL if f"- {d}:" in system)


def shown(request: ModelRequest) -> tuple[str, str]:
    """(response shown as Assistant A, response shown as Assistant B) in a pairwise round."""
    text = _material(request, "response_a")
    a = text.split("<response_a>\n", 1)[1].split("\n</response_a>", 1)[0]
    b = text.split("<response_b>\n", 1)[1].split("\n</response_b>", 1)[0]
    return a, b


def by_first_shown(replies: Mapping[str, Reply]) -> Callable[[ModelRequest], Reply]:
    """A pairwise reply function: the reply depends on which response is shown first (rounds run
    concurrently, so a reply list would be consumed in a nondeterministic order)."""
    return lambda request: replies[shown(request)[0]]
