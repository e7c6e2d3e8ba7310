"""The review queue as the UI uses it: the next item by routing priority, and agreement per evaluator.

Reading and writing go through verdict_daemon.review (list_items, get_item, record_labels,
review_agreement), the functions `verdict review` uses, in their short state.duckdb transactions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from verdict.tenancy import TenantId
from verdict_daemon.errors import DaemonError
from verdict_daemon.review import REASONS, list_items, review_agreement
from verdict_daemon.review.labelled import DimensionAgreement
from verdict_daemon.store.judgments import evaluator_definition
from verdict_daemon.store.review import ReviewRepository

MIN_AGREEMENT_ITEMS = 10  # labelled items a dimension needs before its agreement figures are shown


@dataclass(frozen=True)
class EvaluatorAgreement:
    fingerprint: str
    name: str | None  # the evaluator's name (None: its registration is gone)
    dimensions: tuple[DimensionAgreement, ...]


def next_item(store, tenant: TenantId, skip: str | None = None, traces: tuple[str, ...] | None = None) -> str | None:
    """The next unlabelled item in routing priority (unclear, split votes, inconsistent, audit), newest
    first within a reason; `skip` (the item just labelled) is passed over; `traces`: only items of these."""
    for reason in REASONS:
        for item in list_items(store, tenant, status="pending", reason=reason, limit=2, traces=traces).items:
            if item.item_id != skip:
                return item.item_id
    return None


def agreements(store, tenant: TenantId) -> tuple[EvaluatorAgreement, ...]:
    """Judge–human (and human–human) agreement of every evaluator with labelled items; empty without labels."""
    try:
        fingerprint, dimensions = review_agreement(store, tenant)
    except DaemonError as exc:
        if exc.code == "no_labels":
            return ()
        if exc.code != "evaluator_ambiguous":
            raise
        groups = [(fp, review_agreement(store, tenant, fingerprint=fp)[1]) for fp in exc.details["fingerprints"]]
    else:
        groups = [(fingerprint, dimensions)]
    names = {r.fingerprint: r.evaluator for r in ReviewRepository(store).latest_labels(tenant)}
    return tuple(EvaluatorAgreement(fp, names.get(fp), tuple(dims)) for fp, dims in groups)


def dimension_descriptions(store, tenant: TenantId, fingerprint: str) -> dict[str, str]:
    """Dimension name -> its description in the evaluator's rubric, as registered with its fingerprint; empty
    for an evaluator without a rubric (a graph judge) or one whose registration is gone."""
    stored = evaluator_definition(store, tenant, fingerprint)
    rubric = json.loads(stored).get("rubric") if stored else None
    dimensions = rubric.get("dimensions") if isinstance(rubric, dict) else None
    return {d["name"]: d["description"] for d in dimensions or ()
            if isinstance(d, dict) and isinstance(d.get("name"), str) and isinstance(d.get("description"), str)}
