"""The `evaluations` view over one tenant's `logs`: every `gen_ai.evaluation.result` log record once
(docs/evaluations.md), whoever evaluated: Verdict's daemon ([export.evaluations]) or another tool.

A record is named by its `verdict.evaluation.id` attribute when it has one (Verdict's records: a resent
record keeps it), else by its `record_id` (the hash of the record as sent, which the `logs` view already
deduplicates on). The first copy received is shown. Columns are the event's attributes in the GenAI semantic
conventions, evaluator provenance as proposed (`gen_ai.evaluation.evaluator.*`), and `attributes` whole.
"""

from __future__ import annotations

from collector.view_sql import create_view
from verdict import semconv as sc


def _attribute(key: str, cast: str = "VARCHAR") -> str:
    text = f"attributes->>'$.\"{key}\"'"
    return text if cast == "VARCHAR" else f"TRY_CAST({text} AS {cast})"


_COLUMNS = {
    "name": _attribute(sc.EVALUATION_NAME),
    "score_value": _attribute(sc.EVALUATION_SCORE_VALUE, "DOUBLE"),
    "score_label": _attribute(sc.EVALUATION_SCORE_LABEL),
    "explanation": _attribute(sc.EVALUATION_EXPLANATION),
    "response_id": _attribute(sc.RESPONSE_ID),
    "error_type": _attribute(sc.ERROR_TYPE),
    "evaluator_name": _attribute(sc.EVALUATOR_NAME),
    "evaluator_version": _attribute(sc.EVALUATOR_VERSION),
    "evaluator_type": _attribute(sc.EVALUATOR_TYPE),
    "evaluator_id": _attribute(sc.EVALUATOR_ID),
}


def evaluation_statements() -> list[str]:
    """The view, over the `logs` view already defined."""
    columns = ",\n  ".join(f"{expression} AS {name}" for name, expression in _COLUMNS.items())
    return [create_view(
        "evaluations",
        f"SELECT tenant_id, coalesce({_attribute(sc.EVALUATION_RECORD_ID)}, record_id) AS evaluation_id, trace_id,\n"
        f"  span_id, time,\n  {columns},\n  service_name, scope_name, attributes, received_at\n"
        f"FROM logs WHERE event_name = '{sc.EVENT_EVALUATION_RESULT}'\n"
        "QUALIFY row_number() OVER (PARTITION BY evaluation_id ORDER BY received_at, record_id) = 1")]
