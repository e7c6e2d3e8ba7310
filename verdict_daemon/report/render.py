"""ReportData → one self-contained HTML page: inline CSS and SVG, no script, no external resource.

Every panel renders an explanatory empty state when it has nothing to show. Every string from state
goes through `safe` (redacted and escaped); numbers are formatted here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import cast

from verdict_daemon.report.charts import pct, rate_chart, time_domain, tokens_chart
from verdict_daemon.report.escape import safe
from verdict_daemon.report.model import (
    CoverageRow,
    DriftWindows,
    EvaluatorSection,
    ExampleTrace,
    HeatCell,
    Panel,
    ReportData,
    ReviewItem,
    ReviewList,
    SignalRow,
)
from verdict_daemon.report.palette import rate_colour, text_on
from verdict_daemon.review.queue import DimensionJudgment

KIND_LABELS = {"regression": "▼ regression", "improvement": "▲ improvement", "coverage_drop": "⚠ coverage drop"}
STATUS_LABELS = {"healthy": "✔ healthy", "degraded": "✖ degraded", "insufficient_data": "? insufficient data"}
SECTIONS = (("signals", "Drift signals"), ("heatmap", "Latest pass rate by cluster and dimension"),
            ("pass-rates", "Pass rate over time"), ("coverage", "Coverage"), ("judge-health", "Judge health"),
            ("review", "Human review queue"), ("spend", "Judge cost and tokens"))




@dataclass(frozen=True)
class Links:
    """Where a live page (verdict ui) links a signal and an example trace; the static report has none."""

    signal: Callable[[str], str]  # signal id -> URL of its drill-down
    trace: Callable[[str], str]  # trace id -> URL of its detail
    traces: Callable[[Mapping[str, str]], str] | None = None  # filter values -> URL of the matching traces


def stylesheet() -> str:
    return resources.files("verdict_daemon.report").joinpath("assets/report.css").read_text(encoding="utf-8")


def _num(value: float | None, fmt: str = ".3g") -> str:
    return "—" if value is None else format(value, fmt)


def when(at: datetime | None) -> str:
    return "—" if at is None else f"{at:%Y-%m-%d %H:%M} UTC"


def empty(text: str) -> str:
    return f'<p class="empty" role="note">{text}</p>'


def table(label: str, headers: Iterable[str], rows: Iterable[str], css_class: str = "") -> str:
    """A captioned table in a horizontally scrolling wrapper (phones); `rows` are ready <tr> strings."""
    head = "".join(f'<th scope="col">{h}</th>' for h in headers)
    return (f'<div class="table-wrap" role="region" aria-label="{label}" tabindex="0"><table class="{css_class}">'
            f"<caption>{label}</caption><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def _evaluator_heading(e: EvaluatorSection, level: int = 3) -> str:
    return (f'<h{level} class="evaluator">Evaluator <code>{safe(e.name)}</code> '
            f'<span class="muted">fingerprint {safe(e.fingerprint[:12])}</span></h{level}>')


def section(key: str, title: str, body: str) -> str:
    return f'<section id="{key}" aria-labelledby="{key}-h"><h2 id="{key}-h">{title}</h2>{body}</section>'


def panels(data: ReportData, links: Links | None = None) -> dict[str, str]:
    """Each section's HTML by key (SECTIONS); with `links`, signals and examples link to live pages."""
    return {
        "signals": _signals(data, links), "heatmap": _heatmaps(data, links), "pass-rates": _pass_rates(data),
        "coverage": _coverage(data), "judge-health": _health(data), "review": _review(data),
        "spend": _spend(data),
    }


def render(data: ReportData) -> str:
    parts = panels(data)
    nav = "".join(f'<li><a href="#{key}">{title}</a></li>' for key, title in SECTIONS)
    body = "".join(section(key, title, parts[key]) for key, title in SECTIONS)
    title = f"Verdict report — {safe(data.tenant)}"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            f"img-src data:\"><title>{title}</title><style>{stylesheet()}</style></head><body>"
            f'<header><h1>{title}</h1>{summary(data)}<nav aria-label="Sections"><ul>{nav}</ul></nav></header>'
            f"<main>{body}</main><footer>{_footer()}</footer></body></html>")


def summary(data: ReportData) -> str:
    runs = [e.run for e in data.evaluators if e.run is not None]
    closing = [r.as_of for r in runs if r.closing]
    items = (("Generated", when(data.generated_at)), ("Sampled traces", f"{data.sampled_traces:,}"),
             ("Evaluators", str(len(data.evaluators))), ("Signals (latest decisions)", str(data.signal_count)),
             ("Latest closing decision", when(max(closing)) if closing else
              "none yet" if runs else "no drift run yet"))
    return '<dl class="summary">' + "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in items) + "</dl>"


def _footer() -> str:
    return ("<p>Pass rate = PASS / (PASS + FAIL) of the latest judgment per trace; UNCLEAR and ERROR are left out "
            "of the rate and shown under Coverage. Bands are 95 % Wilson score intervals. Signals come from the "
            "latest completed drift run per evaluator fingerprint: Fisher's exact test (Mann-Whitney U for scores), "
            "Benjamini-Hochberg adjusted p, Cliff's delta with its 95 % interval; MDE is the smallest change the "
            "window sizes detect with 80 % power at the run's alpha. Each evaluator headlines its latest closing "
            "decision (the window that is exactly a closed alert period, at the larger share of its alpha); a later "
            "early look, at a small share of the open period's alpha, is shown under it as such. Content is redacted. Generated by "
            "<code>verdict report</code>; this file loads nothing from the network.</p>")


def _no_judgments() -> str:
    return empty("Nothing has been judged for this tenant yet: the daemon (or <code>verdict pipeline</code>) "
                  "samples and judges traces from the span lake; this panel fills in once judgments exist.")


# --- drift signals ----------------------------------------------------------------------------
def _signals(data: ReportData, links: Links | None) -> str:
    if not any(e.run for e in data.evaluators):
        return empty("No drift run yet: drift runs need judged traces in both the baseline and the current "
                      "window (by default 7 days, a 1-day gap and 1 day). Run <code>verdict pipeline</code> or "
                      "the daemon's drift job; signals appear here after the first completed run.")
    return "".join(_run_signals(e, links) for e in data.evaluators if e.run)


def _run_signals(e: EvaluatorSection, links: Links | None) -> str:
    out = _evaluator_heading(e) + _run_block(e, cast(DriftWindows, e.run), e.signals, links)  # called with a run only
    out += _run_block(e, e.look, e.look_signals, links) if e.look else ""
    return out + (_run_block(e, e.weekly, e.weekly_signals, links) if e.weekly else "")


def _run_block(e: EvaluatorSection, r: DriftWindows, signals: tuple[SignalRow, ...], links: Links | None) -> str:
    what = (f"Closing decision for the period {when(r.current_start)} to {when(r.as_of)}" if r.closing else
            f"Early look as of {when(r.as_of)}, inside the open period" + ("" if e.look else " (no period closed yet)"))
    if r.small_cell_start is not None:
        what = (("Latest weekly decision: " if r is e.weekly else "Weekly decision: ") + what
                + f"; cells under {r.min_usable} usable judgments in it tested over {_days(r)} days "
                  f"({when(r.small_cell_start)} to {when(r.as_of)})")
    meta = (f'<p class="run"><strong>{what}</strong> (run <code>{safe(r.run_id[:12])}</code>): baseline '
            f"{when(r.baseline_start)} to {when(r.baseline_end)}, current {when(r.current_start)} to {when(r.as_of)}; "
            f"{r.judgments:,} judgments, {r.tested} of {r.cells} cells tested (alpha {r.alpha:g}, effect gate "
            f"{r.effect_gate:g}, at least {r.min_usable} usable per window){_untested(e, r)}.</p>")
    if not signals:
        return meta + empty(_no_signals(e, r))
    headers = ("Cluster", "Dimension", "Kind", "Baseline → current (n)", "Cliff's δ [95 % CI]", "p", "Adjusted p",
               "MDE", "Examples")
    kind = "closing decision" if r.closing else "early look"
    return meta + table(f"Signals of evaluator {safe(e.name)}, {kind}", headers,
                         (_signal_row(s, links, r) for s in signals), "signals")


def _no_signals(e: EvaluatorSection, r: DriftWindows) -> str:
    """What a run without signals says, and what it does not: an early look after a closing decision covers
    part of the open period only and never withdraws that decision's signals."""
    look = r is e.look
    stands = (" It does not withdraw the closing decision above: its signals stand until a later closing decision."
              if look else "")
    if r.tested == 0:
        return (f"{'This early look' if look else 'This run'} tested no cell (none had {r.min_usable} usable "
                "judgments in both windows), so it says nothing yet about whether any cell changed." + stands)
    first = (f"This early look raised no signal in the {r.tested} cells it could test so far (at a small share of "
             "alpha, over part of the open period)." if look else
             f"No signals in this run: none of the {r.tested} tested cells changed significantly with an effect "
             "above the gate.")
    return (first + stands + " Cells with too few judgments are not tested (marked in the heatmap with the window "
            "that would make them testable); see the minimum detectable effect in the docs.")


def _untested(e: EvaluatorSection, r: DriftWindows) -> str:
    """Why the run's other cells were not tested (the detector tests a cell whose current window and a window
    it is compared against both hold `min_usable` usable judgments), and how many the heatmap marks."""
    if r.tested >= r.cells:
        return ""
    marked = sum(c.not_tested and c.usable > 0 for c in e.heatmap) if r is e.run else 0
    return (f"; {r.cells - r.tested} not tested for fewer than {r.min_usable} usable judgments in the current "
            f"window or in the windows it is compared against"
            + (f", {marked} of them marked in the heatmap with why and the window that would make them testable"
               if marked else ""))


def _level(row: SignalRow, value: float | None) -> str:
    """A pass rate or an UNCLEAR+ERROR share as a percentage; a mean score as a number."""
    return _num(value) if row.scored and row.signal.kind != "coverage_drop" else pct(value)


def _days(r: DriftWindows) -> int:
    """The length of a weekly decision's small-cell window, in days."""
    return (r.as_of - cast(datetime, r.small_cell_start)).days


def _signal_row(row: SignalRow, links: Links | None, run: DriftWindows) -> str:
    s = row.signal
    window = f" <small>over {_days(run)} days (small cell)</small>" if s.small_cell and run.small_cell_start else ""
    delta = "—" if s.delta is None else f"{s.delta:+.3f}"
    if s.delta_low is not None and s.delta_high is not None:
        delta += f" [{s.delta_low:+.3f}, {s.delta_high:+.3f}]"
    elif s.kind == "coverage_drop":
        delta = f"{delta} (rise in UNCLEAR+ERROR share)"
    examples = "".join(_example(x, links) for x in row.examples) or '<span class="muted">none stored</span>'
    cluster = safe(s.cluster)
    if links is not None:
        cluster = f'<a class="signal-link" href="{safe(links.signal(s.signal_id))}">{cluster}</a>'
    cells = (cluster, safe(s.dimension), f'<span class="kind kind-{safe(s.kind)}">{KIND_LABELS.get(s.kind, safe(s.kind))}</span>',
             f"{_level(row, s.baseline_level)} ({s.baseline_n}) → {_level(row, s.current_level)} ({s.current_n}){window}",
             delta, _num(s.p_value), _num(s.adjusted_p), "n/a" if row.mde is None else f"{row.mde:.3f}", examples)
    return f'<tr class="signal-row">{"".join(f"<td>{c}</td>" for c in cells)}</tr>'


def _example(x: ExampleTrace, links: Links | None) -> str:
    verdict = safe(x.value or "—") + (f" ({safe(x.error_code)})" if x.error_code else "")
    trace = f"<code>{safe(x.trace_id)}</code>"
    if links is not None:
        trace = f'<a class="trace-link" href="{safe(links.trace(x.trace_id))}">{trace}</a>'
    return (f'<details class="example"><summary>trace <code>{safe(x.trace_id[:12])}…</code></summary><dl>'
            f"<dt>Trace id</dt><dd>{trace}</dd><dt>Started</dt><dd>{when(x.started_at)}</dd>"
            f"{_conversation(x.query, x.response)}<dt>Judge verdict</dt><dd>{verdict}</dd>"
            f'<dt>Judge rationale</dt><dd><pre>{safe(x.reason or "(none)")}</pre></dd></dl></details>')


def _conversation(query: str | None, response: str | None) -> str:
    return (f'<dt>Query</dt><dd><pre>{safe(query or "(none)")}</pre></dd>'
            f'<dt>Response</dt><dd><pre>{safe(response or "(none)")}</pre></dd>')


# --- heatmap ------------------------------------------------------------------------------------
def _heatmaps(data: ReportData, links: Links | None) -> str:
    parts = [_heatmap(e, links.traces if links else None) for e in data.evaluators if e.heatmap]
    if not parts:
        return _no_judgments()
    legend = "".join(f'<span class="swatch" style="background:{rate_colour(r)};color:{text_on(rate_colour(r))}">'
                     f"{int(r * 100)}%</span>" for r in (0, 0.25, 0.5, 0.75, 1))
    return (f'<p class="legend" aria-label="Colour scale">Colour scale (orange = low, purple = high): {legend} '
            "▼ regression, ▲ improvement, ⚠ coverage drop raised by the latest run; — no PASS/FAIL verdict "
            "in the period.</p>" + "".join(parts))


def _heatmap(e: EvaluatorSection, traces: Callable[[Mapping[str, str]], str] | None) -> str:
    clusters = sorted({c.cluster for c in e.heatmap})
    dimensions = sorted({c.dimension for c in e.heatmap})
    cells = {(c.cluster, c.dimension): c for c in e.heatmap}
    lo, hi = cast(tuple[datetime, datetime], e.heat_period)  # set whenever there are cells (gather)
    period = "the latest run's current window" if e.run else "the last day with verdicts"

    def link(text: str, **values: str) -> str:  # live pages: a header or cell opens the traces it counts
        if traces is None:
            return text
        return f'<a class="filter-link" href="{safe(traces({"evaluator": e.name, **values}))}">{text}</a>'

    def cell(cluster: str, dimension: str) -> str:  # a cell's traces: its cluster and dimension, over its period
        return _heat_cell(cells.get((cluster, dimension)), lambda text: link(
            text, cluster=cluster, dimension=dimension, **{"from": lo.isoformat(), "to": hi.isoformat()}))

    rows = (f'<tr><th scope="row">{link(safe(cluster), cluster=cluster)}</th>'
            + "".join(cell(cluster, d) for d in dimensions) + "</tr>" for cluster in clusters)
    return (_evaluator_heading(e) + f'<p class="run">Pass rate over {period}, {when(lo)} to {when(hi)} '
            "(n = PASS+FAIL verdicts).</p>"
            + table(f"Latest pass rate, clusters × dimensions, evaluator {safe(e.name)}",
                     ("Cluster", *(link(safe(d), dimension=d) for d in dimensions)), rows, "heatmap"))


def _heat_cell(cell: HeatCell | None, link: Callable[[str], str] = lambda text: text) -> str:
    if cell is None or cell.rate is None:
        return '<td class="heat-cell heat-none" title="no PASS/FAIL verdict in this period">—</td>'
    colour = rate_colour(cell.rate)
    mark = {"regression": "▼ ", "improvement": "▲ ", "coverage_drop": "⚠ "}.get(cell.signal or "", "")
    label = f"{safe(cell.cluster)} × {safe(cell.dimension)}: {pct(cell.rate)} of {cell.usable}"
    if cell.signal:
        label += f", {safe(cell.signal)} signal"
    untested = f"<small class=\"not-tested\">{_not_tested(cell)}</small>" if cell.not_tested else ""
    if cell.small_cell and not cell.not_tested:
        untested = f'<small class="small-cell">tested over {cell.small_cell.days} days</small>'
        label += f", tested over {cell.small_cell.days} days (small cell)"
    elif untested:
        label += f", {_not_tested(cell)}"
    power = ""
    if cell.mde is not None and cell.tested is not None:
        power = f'<small class="mde">MDE {cell.mde:.3f}</small>'
        label += (f", tested: MDE {cell.mde:.3f} (the smallest drop found with 80 % power after correction; "
                  f"n {cell.tested.current_n} vs {cell.tested.baseline_n})")
    return (f'<td class="heat-cell" style="background:{colour};color:{text_on(colour)}" title="{label}" '
            f'aria-label="{label}">{link(f"{mark}{pct(cell.rate, 0)}<small>n={cell.usable}</small>{untested}{power}")}</td>')


def _not_tested(cell: HeatCell) -> str:
    """Why the detector did not test a cell, and the current window that would make it testable."""
    if not cell.thin_current and cell.tested is not None:
        return (f"not tested: the windows it is compared with hold n={cell.tested.baseline_n} &lt; min_usable "
                f"{cell.min_usable}; tested once they hold {cell.min_usable}")
    over = f" over {cell.small_cell.days} days" if cell.small_cell else ""
    reason = f"not tested: n={cell.usable}{over} &lt; min_usable {cell.min_usable}"
    if cell.window_to_test is None:
        return reason
    return f"{reason}; a {cell.window_to_test.days}-day window would reach it"


# --- pass rate over time -------------------------------------------------------------------------
def _pass_rates(data: ReportData) -> str:
    parts = [_evaluator_charts(i, e) for i, e in enumerate(data.evaluators) if e.series]
    if not parts:
        return _no_judgments()
    return ('<p class="legend">Line: daily pass rate; blue band and whiskers: 95 % Wilson interval; grey: the '
            "latest drift run's baseline window; orange: its current window. Hover a point for its counts.</p>"
            + "".join(parts))


def _evaluator_charts(index: int, e: EvaluatorSection) -> str:
    domain = time_domain(e.series, e.run)
    by_cluster: dict[str, list[str]] = {}
    for j, s in enumerate(e.series):
        chart = rate_chart(f"rate-{index}-{j}", s, e.run, domain)
        by_cluster.setdefault(s.cluster, []).append(
            f'<figure class="chart-box">{chart}<figcaption>{safe(s.dimension)}</figcaption></figure>')
    note = ("" if not e.score_dimensions else
            f'<p class="muted">Score dimensions ({", ".join(safe(d) for d in e.score_dimensions)}) have no pass rate; '
            "their drift is tested on the scores and shown under Drift signals.</p>")
    return _evaluator_heading(e) + note + "".join(
        f'<h4>Cluster <code>{safe(c)}</code></h4><div class="charts">{"".join(charts)}</div>'
        for c, charts in by_cluster.items())


# --- coverage -----------------------------------------------------------------------------------
def _coverage(data: ReportData) -> str:
    parts = [_coveragetable(e) for e in data.evaluators if e.coverage]
    if not parts:
        return _no_judgments()
    return ('<p class="legend">Latest attempt per sampled trace. ERROR: the judge gave no usable reply for the trace '
            "(retried up to the daemon's max attempts); UNCLEAR: the judge could not decide one dimension; no content: "
            "the graded call carried no question or answer text, so it was not sent to the judge. All are "
            "excluded from pass rates.</p>" + "".join(parts))


def _coveragetable(e: EvaluatorSection) -> str:
    headers = ("Cluster", "Sampled", "Judged", "Pending", "ERROR traces", "No content", "Verdicts", "UNCLEAR", "Usable")
    total = CoverageRow("all clusters", *(sum(getattr(r, f) for r in e.coverage)
                                          for f in ("sampled", "judged", "error_traces", "verdicts", "unclear", "usable",
                                                    "no_content")))
    rows = [_coverage_row(r) for r in e.coverage] + [_coverage_row(total, total=True)]
    return _evaluator_heading(e) + table(f"Coverage of evaluator {safe(e.name)}", headers, rows, "coverage")


def _coverage_row(r: CoverageRow, total: bool = False) -> str:
    cells = (f"{r.sampled:,}", f"{r.judged:,}", f"{r.pending:,}", f"{r.error_traces:,} ({pct(r.error_share)})",
             f"{r.no_content:,}", f"{r.verdicts:,}", f"{r.unclear:,} ({pct(r.unclear_share)})", f"{r.usable:,}")
    css = ' class="total"' if total else ""
    return f'<tr{css}><th scope="row">{safe(r.cluster)}</th>{"".join(f"<td>{c}</td>" for c in cells)}</tr>'


# --- judge health, probes, review ----------------------------------------------------------------
def _health(data: ReportData) -> str:
    if data.sentinel:
        headers = ("Evaluator", "Status", "Reason", "Pass rate [95 % Wilson]", "Usable / examples", "Lower-bound threshold",
                   "Sentinel file", "Checked")
        rows = (f"<tr><td>{safe(s.evaluator)} <span class=\"muted\">{safe(s.fingerprint[:12])}</span></td>"
                f'<td><span class="status status-{safe(s.status)}">{STATUS_LABELS.get(s.status, safe(s.status))}</span></td>'
                f"<td>{safe(s.reason)}</td><td>{pct(s.pass_rate)} [{pct(s.pass_rate_low)}, {pct(s.pass_rate_high)}]</td>"
                f"<td>{s.usable} / {s.examples} ({s.errors} err., min. {s.minimum_examples})</td>"
                f"<td>{pct(s.threshold)}</td><td>{safe(s.sentinel_file)}</td>"
                f"<td>{when(s.checked_at)} ({s.checks} on record)</td></tr>" for s in data.sentinel)
        sentinel = table("Judge sentinel health (latest check per evaluator)", headers, rows, "sentinel")
    else:
        sentinel = empty("No sentinel health check on record: give the daemon a <code>[sentinel] file</code> of "
                          "human-labelled examples (or <code>verdict pipeline --judge-sentinel-file</code>) to check "
                          "each judge before it judges traffic.")
    return f"<h3>Sentinel checks</h3>{sentinel}<h3>Behaviour probes</h3>{panel(data.probes, 'Probe results')}"


def panel(panel: Panel, label: str, css_class: str = "panel") -> str:
    if panel.empty_reason is not None:
        return empty(safe(panel.empty_reason))
    rows = ("<tr>" + "".join(f"<td>{safe(v)}</td>" for v in row) + "</tr>" for row in panel.rows)
    note = f'<p class="muted">{safe(panel.note)}</p>' if panel.note else ""
    return table(label, (safe(c) for c in panel.columns), rows, css_class) + note


REASON_LABELS = {"unclear": "unclear", "ensemble_disagreement": "ensemble disagreement",
                 "inconsistent": "inconsistent", "audit": "audit sample"}


def _review(data: ReportData) -> str:
    queue = data.review
    if queue.counts.empty_reason is not None:
        return empty(safe(queue.counts.empty_reason))
    how = ('<p class="legend">Label an item (one <code>--label</code> per dimension; a relabel is a new record and '
           f'the latest wins): <code>verdict review label ITEM --data-dir DATA_DIR --tenant {safe(data.tenant)} '
           '--label DIMENSION=PASS --critique "one line" --reviewer NAME</code>. '
           "<code>verdict review list</code> and <code>show</code> page through the whole queue.</p>")
    return (panel(queue.counts, "Review queue", "panel compact") + how
            + "<h3>Pending items</h3>" + _review_list(queue.pending, "pending", data.tenant)
            + "<h3>Labelled items</h3>" + _review_list(queue.labelled, "labelled", data.tenant))


def _review_list(items: ReviewList, status: str, tenant: str) -> str:
    if not items.items:
        return empty("No pending item: every queued item has a label." if status == "pending" else
                      "No item labelled yet: labels recorded with <code>verdict review label</code> appear here, "
                      "the latest per dimension, with the reviewer and the critique.")
    if items.truncated:
        note = (f'<p class="run" role="note">Showing the {len(items.items)} most recently queued of {items.total:,} '
                f"{status} items; <code>verdict review list --status {status} --offset {len(items.items)}</code> "
                "shows the rest.</p>")
    else:
        note = f'<p class="run">All {items.total:,} {status} item(s), most recently queued first.</p>'
    return (note + f'<ol class="review-items" aria-label="{status.capitalize()} review items">'
            + "".join(_review_item(i, tenant) for i in items.items) + "</ol>")


def _reasons(item: ReviewItem) -> str:
    """Each routing reason, with the dimensions it flagged (an audit item flags none)."""
    out = []
    for reason in item.summary.reasons:
        dims = [d for d, why in item.summary.flagged.items() if why == reason]
        on = f" on {', '.join(safe(d) for d in dims)}" if dims else ""
        out.append(f'<span class="reason">{safe(REASON_LABELS.get(reason, reason))}{on}</span>')
    return " ".join(out)


def _flag(reason: str | None) -> str:
    return "" if reason is None else f" ⚑ flagged: {safe(REASON_LABELS.get(reason, reason))}"


def _judge_value(j: DimensionJudgment | None) -> str:
    """The judge's verdict on a dimension, or its score for a score dimension."""
    if j is None or (j.verdict is None and j.score is None):
        return "—"
    return safe(j.verdict) if j.verdict is not None else f"score {_num(j.score)}"


def _review_item(item: ReviewItem, tenant: str) -> str:
    s = item.summary
    head = (f'<p class="review-head">{_reasons(item)} · evaluator <code>{safe(s.evaluator or s.fingerprint[:12])}</code>'
            f" · cluster <code>{safe(item.cluster)}</code> · queued {when(datetime.fromisoformat(s.queued_at))}</p>")
    judged = {j.dimension: j for j in item.judgments}
    labels = "".join(
        f"<li><strong>{safe(r.dimension)}</strong>: {safe(r.label)} by <code>{safe(r.reviewer)}</code> "
        f"({when(datetime.fromisoformat(r.labelled_at))}, revision {r.revision}; judge: "
        f"{_judge_value(judged.get(r.dimension))}) — “{safe(r.critique)}”</li>"
        for r in item.latest)
    verdicts = "".join(
        f"<dt>{safe(j.dimension)}: {_judge_value(j)}"
        f"{_flag(s.flagged.get(j.dimension))}</dt><dd><pre>{safe(j.rationale or '(no rationale)')}</pre></dd>"
        for j in item.judgments)
    command = "" if item.latest else (
        f"<dt>Label it</dt><dd><code>verdict review label {safe(s.item_id)} --data-dir DATA_DIR --tenant {safe(tenant)} "
        + "".join(f"--label {safe(d)}=PASS " for d, j in judged.items() if j.verdict)
        + '--critique "…" --reviewer NAME</code></dd>')
    context = f"<dt>Context</dt><dd><pre>{safe(item.context)}</pre></dd>" if item.context else ""
    return (f'<li class="review-item">{head}' + (f'<ul class="labels">{labels}</ul>' if labels else "")
            + f'<details class="example review"><summary>Conversation and the judge\'s rationale (item '
            f"<code>{safe(s.item_id[:12])}…</code>)</summary><dl>"
            f"<dt>Item id</dt><dd><code>{safe(s.item_id)}</code></dd><dt>Trace id</dt><dd><code>{safe(s.trace_id)}</code>"
            f"</dd><dt>Started</dt><dd>{when(datetime.fromisoformat(s.started_at))}</dd>"
            f"{_conversation(item.query, item.response)}{context}</dl>"
            f'<p class="verdicts-h">Judge verdicts and rationale per dimension</p><dl>{verdicts}</dl>'
            + (f"<dl>{command}</dl>" if command else "") + "</details></li>")


# --- spend ---------------------------------------------------------------------------------------
def _spend(data: ReportData) -> str:
    if not data.spend:
        return empty("No judge calls on record yet: tokens and cost appear once the daemon has judged traces.")
    headers = ("Evaluator", "Attempts", "Errors", "Requests", "Requests per attempt", "Input tokens", "Output tokens",
               "Cost (USD)")
    rows = [f"<tr><td>{safe(s.evaluator)} <span class=\"muted\">{safe(s.fingerprint[:12])}</span></td>"
            f"<td>{s.attempts:,}</td><td>{s.errors:,}</td>"
            f"<td>{'—' if s.requests is None else f'{s.requests:,}'}</td>"
            f"<td>{'—' if s.requests_per_attempt is None else f'{s.requests_per_attempt:g}'}</td>"
            f"<td>{s.input_tokens:,}</td><td>{s.output_tokens:,}</td>"
            f"<td>${s.cost_usd:,.4f}</td></tr>" for s in data.spend]
    note = ('<p class="muted">Every attempt counts, retries and errors included. Requests are the HTTP requests '
            "sent to the judge model (the client's retries and re-asked unusable replies included; — for attempts "
            "stored before they were counted). Cost is what the model client reported; a model without a price "
            "(local or scripted) reports $0.</p>")
    chart = ('<figure class="chart-box wide">' + tokens_chart("tokens", data.spend_days)
             + '<figcaption>Tokens per day of judging (dark: input, light: output)</figcaption></figure>')
    return table("Judge spend per evaluator", headers, rows, "spend") + note + chart
