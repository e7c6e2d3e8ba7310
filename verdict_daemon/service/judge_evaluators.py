"""Rubric `Judge` and `JudgeEnsemble` evaluators (verdict.judges), wrapped for the daemon."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from verdict.models.base import Usage
from verdict_daemon.config import DEFAULT_CONVERSATION_TOKENS, EvaluatorConfig
from verdict_daemon.errors import DaemonError
from verdict_daemon.service.conversation import CONVERSATION, TURN
from verdict_daemon.service.evaluators import (
    DimensionVerdict,
    Outcome,
    error_outcome,
    evaluator_fingerprint,
    resolve_judge_model,
    tool_call_check,
)
from verdict_daemon.service.material import Material, bound_entries


class JudgeEvaluator:
    """Anything with `.fingerprint` and `.grade(answer, query=, context=, history=) -> Judgment` (Judge,
    JudgeEnsemble). `judge` and `rubric` are public for the sentinel health check, which grades with the raw judge
    (`rubric` None: the default rubric). With `history_tokens` > 0 (a judge built with `history=True`) a turn of a
    conversation is graded with the conversation so far within that budget; with `trajectory_steps` > 0 (a judge
    built with `trajectory=True`) an agent run with the newest steps of its tool trajectory. With
    `conversation_tokens` > 0 (a judge built with `unit="conversation"`) it judges closed conversations, each shown
    as its turns within that budget."""

    def __init__(self, name: str, judge: Any, definition: dict[str, Any], rubric: Any = None,
                 history_tokens: int = 0, trajectory_steps: int = 0, conversation_tokens: int = 0) -> None:
        self.name = name
        self.judge = judge
        self.rubric = rubric
        self.history_tokens = history_tokens
        self.trajectory_steps = trajectory_steps
        self.conversation_tokens = conversation_tokens
        self.unit = CONVERSATION if conversation_tokens else TURN
        self.fingerprint: str = evaluator_fingerprint(judge.fingerprint, history_tokens, trajectory_steps,
                                                      conversation_tokens)
        # A rubric graded on agent runs only (every dimension needs a trajectory): other traces are not sent.
        self.needs_trajectory = rubric is not None and all(d.requires_trajectory for d in rubric.dimensions)
        # The bounds it shows the judge, as the review queue reads them back (material.judged_sample).
        self.definition: Mapping[str, Any] = definition | bound_entries(history_tokens, trajectory_steps,
                                                                        conversation_tokens)

    def evaluate(self, material: Material) -> Outcome:
        # The sample a graph evaluator gets too; the review queue rebuilds it from the definition (judged_sample).
        sample = material.as_sample(self.history_tokens, self.trajectory_steps, self.conversation_tokens)
        if self.unit == CONVERSATION:
            judgment = self.judge.grade(sample["conversation"])
        else:
            judgment = self.judge.grade(sample["response"], query=sample["query"] or None,
                                        context=sample["context"] or None, history=sample["history"] or None,
                                        trajectory=sample["trajectory"] or None)
        usage = _usage(judgment)
        if str(judgment.status) == "ERROR":
            return error_outcome(judgment.error or "the judge returned ERROR", usage, judgment.reply)
        return Outcome(tuple(DimensionVerdict(d.dimension, str(d.verdict), None, _reason(d), _votes(d))
                             for d in judgment.dimensions) + tool_call_check(material, self.trajectory_steps),
                       usage=usage)


def _usage(judgment: Any) -> Usage:
    """A Judgment's usage, or an ensemble judgment's summed over its components."""
    if hasattr(judgment, "usage"):
        return cast(Usage, judgment.usage)
    return sum((c.usage for c in judgment.components), Usage())


def _reason(graded: Any) -> str:
    rationale = getattr(graded, "rationale", None)
    if rationale is not None:
        return cast(str, rationale[:1000])
    return "votes " + ", ".join(f"{verdict}={n}" for verdict, n in sorted(graded.votes.items()))


def _votes(graded: Any) -> dict[str, int] | None:
    """An ensemble vote's tally (`DimensionVote.votes`) with string keys; None for a single judge's verdict."""
    votes = getattr(graded, "votes", None)
    return None if votes is None else {str(verdict): n for verdict, n in sorted(votes.items())}


def _rubric(config: EvaluatorConfig):
    from verdict.judges.rubric import (
        CONVERSATION_RUBRIC,
        DEFAULT_RUBRIC,
        SHIPPED_RUBRICS,
        RubricError,
        load_rubric,
    )

    if config.rubric is not None:
        rubric = SHIPPED_RUBRICS[config.rubric]  # a known name (EvaluatorConfig checks)
    elif config.rubric_file is None:
        rubric = CONVERSATION_RUBRIC if config.unit == CONVERSATION else DEFAULT_RUBRIC
    else:
        try:
            rubric = load_rubric(config.rubric_file)
        except RubricError as exc:
            raise DaemonError("invalid_config", f"evaluators.{config.name}.rubric_file: {exc}") from None
    needs = [d.name for d in rubric.dimensions if d.requires_trajectory]
    if needs and config.unit == CONVERSATION:
        raise DaemonError("invalid_config", f"evaluators.{config.name}: rubric {rubric.name!r} has dimensions that "
                          f"need a tool trajectory ({', '.join(needs)}): a turn evaluator's, not unit = \"conversation\"")
    if needs and not config.trajectory:
        raise DaemonError("invalid_config", f"evaluators.{config.name}: rubric {rubric.name!r} has dimensions that "
                          f"need a tool trajectory ({', '.join(needs)}): set trajectory = true")
    return rubric


def build_judge_evaluator(config: EvaluatorConfig, history_tokens: int = 0, trajectory_steps: int = 0,
                          conversation_tokens: int = DEFAULT_CONVERSATION_TOKENS) -> JudgeEvaluator:
    """The rubric or ensemble evaluator of `config`; with `history_tokens` > 0 its judges grade a turn of a
    conversation with the conversation so far ([conversations] history_tokens), with `trajectory_steps` > 0 an
    agent run with its tool trajectory ([conversations] trajectory_steps). A conversation evaluator (`unit =
    "conversation"`) grades closed conversations within `conversation_tokens` instead, neither of the two."""
    from verdict.graph.errors import ConfigurationError
    from verdict.judges.judge import Judge

    rubric = _rubric(config)
    unit = config.unit
    if unit == CONVERSATION:
        history_tokens = trajectory_steps = 0
    else:
        conversation_tokens = 0
    judge: Any  # a Judge or a JudgeEnsemble: both have fingerprint and grade()
    try:
        if config.kind == "rubric":
            judge = Judge(resolve_judge_model(cast(str, config.model)), rubric, per_dimension=config.per_dimension,
                          history=history_tokens > 0, trajectory=trajectory_steps > 0, name=config.name, unit=unit)
            models = [judge.model.name]
        else:
            from verdict.judges.ensemble import JudgeEnsemble

            members = [Judge(resolve_judge_model(m), rubric, per_dimension=config.per_dimension,
                             history=history_tokens > 0, trajectory=trajectory_steps > 0, name=f"{config.name}-{i}",
                             unit=unit)
                       for i, m in enumerate(config.models)]
            judge = JudgeEnsemble(members)
            models = [m.model.name for m in members]
    except (ConfigurationError, ValueError, TypeError) as exc:
        raise DaemonError("evaluator_error", f"evaluator {config.name!r}: {exc}") from None
    definition = {"kind": config.kind, "models": models, "rubric": rubric.canonical(),
                  "fingerprint_of": type(judge).__name__}
    if unit == CONVERSATION:
        definition["unit"] = unit
    return JudgeEvaluator(config.name, judge, definition, rubric, history_tokens, trajectory_steps, conversation_tokens)
