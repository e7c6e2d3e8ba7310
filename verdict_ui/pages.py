"""HTML of every page: the report's look (its stylesheet, tables, panels and charts) plus the UI's own.

Every string from storage goes through `safe` (redacted again and escaped, verdict_daemon.report.escape);
URLs are built here with urlencode and escaped too. Pages load only /static/ files (CSP 'self').
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from urllib.parse import quote, urlencode

from verdict_daemon.report.charts import pct, rate_chart, time_domain
from verdict_daemon.report.escape import safe
from verdict_daemon.report.model import Panel, RateSeries, ReportData
from verdict_daemon.report.render import (
    KIND_LABELS,
    REASON_LABELS,
    SECTIONS,
    Links,
    empty,
    panel,
    panels,
    section,
    summary,
    table,
    when,
)
from verdict_daemon.review import ItemDetail, ItemPage
from verdict_ui.conversations import (
    PAGE_SIZE,
    STATUSES,
    ConversationDetail,
    ConversationFilter,
    ConversationPage,
    Turn,
)
from verdict_ui.labelling import MIN_AGREEMENT_ITEMS, EvaluatorAgreement
from verdict_ui.signals import CellHistory, CellTrace, SignalDetail, TraceSignal
from verdict_ui.span_tree import Span, pretty, tree
from verdict_ui.traces import (
    VERDICTS,
    Facets,
    Message,
    TraceDetail,
    TraceFilter,
    TracePage,
    TraceRow,
)
from verdict_ui.traffic import DAY_CHOICES, Traffic, TrafficFilter, TrafficRow

NAV = (("/", "Overview"), ("/signals", "Signals"), ("/traces", "Traces"), ("/conversations", "Conversations"),
       ("/traffic", "Traffic"), ("/review", "Review queue"))
LINKS = Links(signal=lambda signal_id: signal_url(signal_id), trace=lambda trace_id: trace_url(trace_id),
              traces=lambda values: f"/traces?{urlencode(values)}")
_CURRENT = ' aria-current="page"'
_QUOTED = re.compile(r"[\"“']([^\"”']{4,300})[\"”']")  # evidence a judge quoted in its rationale


def trace_url(trace_id: str, day=None) -> str:
    return f"/traces/{quote(trace_id, safe='')}" + (f"?{urlencode({'day': day.isoformat()})}" if day else "")


def item_url(item_id: str, signal: str | None = None, tail: str = "") -> str:
    """A review item's page (`tail`: a sub-path); inside a signal's queue it carries `signal`, so the next
    item and the label form stay among that signal's examples."""
    return f"/review/{quote(item_id, safe='')}{tail}" + (f"?{urlencode({'signal': signal})}" if signal else "")


def signal_url(signal_id: str) -> str:
    return f"/signals/{quote(signal_id, safe='')}"


def conversation_url(key: str, seq: int | None = None, trace: str | None = None) -> str:
    """A conversation's page: the key's conversation `seq`, or the one holding `trace`."""
    query = {k: v for k, v in (("seq", seq), ("trace", trace)) if v is not None}
    return f"/conversations/{quote(key, safe='')}" + (f"?{urlencode(query)}" if query else "")


def page(tenant: str, title: str, body: str, current: str = "", refresh: int | None = None) -> str:
    """The page around `body` (HTML built by this module); `tenant` and `title` are text, escaped here: a
    title may hold stored values (a cluster id is any printable text), and `current` only picks a nav link.
    `refresh`: seconds after which the browser reloads the page (an opt-in `?refresh=`)."""
    nav = "".join(f'<li><a href="{href}"{_CURRENT if href == current else ""}>{label}</a></li>' for href, label in NAV)
    title = safe(title)
    reload = f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else ""
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">{reload}'
            f'<title>{title} — Verdict</title><link rel="icon" href="data:,">'
            '<link rel="stylesheet" href="/static/report.css"><link rel="stylesheet" href="/static/ui.css">'
            '<script src="/static/ui.js" defer></script></head><body>'
            f'<header><p class="brand">Verdict · tenant <code>{safe(tenant)}</code></p>'
            f'<nav aria-label="Pages"><ul>{nav}</ul></nav></header>'
            f'<main id="main"><h1>{title}</h1>{body}</main>'
            '<footer><p class="muted">Content is redacted. Served by <code>verdict ui</code>; data is a snapshot '
            "of the span lake and state.duckdb taken a few seconds ago at most.</p></footer></body></html>")


def error_page(tenant: str | None, status: int, message: str) -> str:
    titles = {400: "Bad request", 401: "Sign in", 403: "Forbidden", 404: "Not found", 503: "Busy"}
    body = f'<p class="empty" role="alert">{safe(message)}</p>'
    return page(tenant or "—", f"{status} {titles.get(status, 'Error')}", body)


def hidden_csrf(csrf: str) -> str:
    return f'<input type="hidden" name="csrf" value="{safe(csrf)}">'


def login_page(csrf: str, message: str | None = None) -> str:
    note = f'<p class="empty" role="alert">{safe(message)}</p>' if message else ""
    body = (f'{note}<form method="post" action="/login" class="stack">{hidden_csrf(csrf)}'
            '<label for="token">Access token</label><input id="token" name="token" type="password" '
            'autocomplete="current-password" required><button type="submit">Sign in</button></form>')
    return page("—", "Sign in", body)


def _num(value: float | None, fmt: str = ".3g") -> str:
    return "—" if value is None else format(value, fmt)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} ms"


def _tokens(a: int | None, b: int | None) -> str:
    return "—" if a is None and b is None else f"{a or 0:,} in / {b or 0:,} out"


def _at(at: datetime | None) -> str:
    return "—" if at is None else f"{at:%Y-%m-%d %H:%M:%S}"


# --- overview ---------------------------------------------------------------------------------------------
OVERVIEW = tuple((k, t) for k, t in SECTIONS if k != "review")


def overview(data: ReportData, agreement: str) -> str:
    """The report's sections (their review list replaced by the queue's counts and a link to /review)."""
    parts = panels(data, LINKS)
    nav = "".join(f'<li><a href="#{k}">{t}</a></li>' for k, t in (*OVERVIEW, ("review", "Human review")))
    review_body = (panel(data.review.counts, "Review queue", "panel compact")
                   + '<p><a class="button" href="/review">Open the review queue</a></p>' + agreement)
    body = "".join(section(k, t, parts[k]) for k, t in OVERVIEW) + section("review", "Human review", review_body)
    return summary(data) + f'<nav aria-label="Sections"><ul>{nav}</ul></nav>' + body


# --- traces ---------------------------------------------------------------------------------------------
def _field(name: str, label: str, value: str | None, kind: str = "text") -> str:
    return (f'<div class="field"><label for="f-{name}">{label}</label>'
            f'<input id="f-{name}" name="{name}" type="{kind}" value="{safe(value or "")}"></div>')


def _select(name: str, label: str, value: str | None, choices: tuple[str, ...]) -> str:
    """A list of the values present; a value given in the URL that the data no longer holds stays selectable."""
    shown = (*choices, value) if value and value not in choices else choices
    options = "".join(f'<option value="{safe(v)}"{" selected" if v == value else ""}>{safe(v)}</option>' for v in shown)
    return (f'<div class="field"><label for="f-{name}">{label}</label><select id="f-{name}" name="{name}">'
            f'<option value="">any</option>{options}</select></div>')


def _filter_form(f: TraceFilter, values: Facets) -> str:
    day = f.whole_day
    return ('<form method="get" action="/traces" class="filters" role="search" aria-label="Filter traces">'
            + _select("date", "Day (UTC)", day.isoformat() if day else None, values.dates)
            + _field("from", "From (UTC)", f.since.isoformat(timespec="minutes") if f.since and not day else None,
                     "datetime-local")
            + _field("to", "To (UTC)", f.until.isoformat(timespec="minutes") if f.until and not day else None,
                     "datetime-local")
            + _select("intent", "Intent", f.intent, values.intents) + _select("model", "Model", f.model, values.models)
            + _select("service", "Service", f.service, values.services)
            + _select("evaluator", "Evaluator", f.evaluator, values.evaluators)
            + _select("cluster", "Cluster", f.cluster, values.clusters)
            + _select("dimension", "Dimension", f.dimension, values.dimensions)
            + _select("verdict", "Verdict", f.verdict, VERDICTS) + _field("q", "Text in messages", f.search, "search")
            + '<div class="field"><button type="submit">Filter</button> <a href="/traces">Clear</a></div></form>')


def _badges(verdicts) -> str:
    order = ("FAIL", "UNCLEAR", "ERROR", "NO_CONTENT", "PASS")
    return " ".join(f'<span class="badge v-{v.lower()}">{v} {verdicts[v]}</span>'
                    for v in order if verdicts.get(v)) or '<span class="muted">not judged</span>'


def clipped(text: str | None) -> str:
    """Text clipped to three lines by the stylesheet; the whole of it (as stored) on demand, by keyboard too."""
    if not text:
        return '<span class="muted">—</span>'
    return f'<details class="clip"><summary>{safe(text)}</summary></details>'


def filter_link(label: str, values: Mapping[str, str | None], css: str = "filter-link") -> str:
    """`label` (HTML) linking to the traces that match `values` (empty ones left out)."""
    query = urlencode({k: v for k, v in values.items() if v})
    return f'<a class="{css}" href="/traces?{safe(query)}">{label}</a>'


def card_row(headers: tuple[str, ...], cells: Iterable[str], head: str = "") -> str:
    """A row of a "cards" table: each cell names its column, shown above it on a narrow screen (ui.css)."""
    return f"<tr>{head}" + "".join(f'<td data-label="{h}">{c}</td>' for h, c in zip(headers, cells, strict=True)) + "</tr>"


def exports(path: str, query: dict[str, str]) -> str:
    """Links to this list as CSV and JSON (verdict_ui.export)."""
    links = " · ".join(f'<a class="export" href="{safe(path + "?" + urlencode({**query, "format": f}))}">{f.upper()}</a>'
                       for f in ("csv", "json"))
    return f'<p class="exports">Export this list: {links}</p>'


TRACE_HEADERS = ("Started (UTC) · trace", "Intent · cluster · models", "Calls · span · tokens · status",
                 "Latest verdicts", "Question (first call's last user message)", "Answer")


def _trace_row(r: TraceRow) -> str:
    where = " · ".join(filter_link(safe(v), {k: v}) for k, v in (("intent", r.intent_key), ("cluster", r.cluster),
                                                                   *(("model", m) for m in r.models)) if v) or "—"
    status = safe(r.status_code or "—") + (f" ({r.errors} of {r.calls})" if r.errors else "")
    talk = (f'<br><a class="conversation-link" href="{safe(conversation_url(r.conversation_id, trace=r.trace_id))}">'
            "conversation</a>" if r.conversation_id else "")
    cells = (f'{_at(r.started_at)}<br><a class="trace-link" href="{safe(trace_url(r.trace_id, r.day))}">'
             f"<code>{safe(r.trace_id[:16])}</code></a>{talk}", where,
             f"{r.calls} call{'s' if r.calls != 1 else ''} · {_ms(r.latency_ms)}<br>"
             f"{_tokens(r.input_tokens, r.output_tokens)}<br>{status}",
             _badges(r.verdicts), clipped(r.question), clipped(r.answer))
    return card_row(TRACE_HEADERS, cells)


def traces(f: TraceFilter, result: TracePage, values: Facets) -> str:
    listing = (table("Traces, newest first (one row per trace: its calls summed up)", TRACE_HEADERS,
                     (_trace_row(r) for r in result.rows), "traces cards")
               if result.rows else
               empty("No model call matches these filters, so no trace is listed." if f.query_string() else
                     "No model call in the span lake yet: spans arrive through the collector."))
    more = (f'<p><a class="button" rel="next" href="/traces?{safe(urlencode(f.query_string(before=result.next_cursor)))}">'
            "Next page</a></p>" if result.next_cursor else "")
    first = f'<p><a href="/traces?{safe(urlencode(f.query_string()))}">First page</a></p>' if f.before else ""
    here = f.query_string(before=f"{f.before[0]}~{f.before[1]}" if f.before else None)
    return _filter_form(f, values) + listing + first + more + (exports("/traces", here) if result.rows else "")


# --- app traffic -----------------------------------------------------------------------------------------
TRAFFIC_HEADERS = ("Calls", "Error rate", "Latency p50", "Latency p95", "Tokens", "Cost (list price)")


def _traffic_cells(r: TrafficRow) -> tuple[str, ...]:
    return (f"{r.calls:,}", f"{pct(r.error_rate)} ({r.errors:,})", _ms(r.p50_ms), _ms(r.p95_ms),
            _tokens(r.input_tokens, r.output_tokens), "—" if r.cost_usd is None else f"${r.cost_usd:,.4f}")


def traffic_page(f: TrafficFilter, t: Traffic, values: Facets) -> str:
    form = ('<form method="get" action="/traffic" class="filters" role="search" aria-label="Filter traffic">'
            + _select("days", "Days (newest)", str(f.days), DAY_CHOICES) + _select("model", "Model", f.model, values.models)
            + _select("intent", "Intent", f.intent, values.intents)
            + '<div class="field"><button type="submit">Show</button> <a href="/traffic">Reset</a></div></form>')
    if not t.days:
        return form + empty("No model call in the span lake yet: spans arrive through the collector.")
    if not t.by_day:
        return form + empty("No model call matches these filters in the days shown.")
    days = (card_row(("Day", *TRAFFIC_HEADERS), (filter_link(d.day.isoformat() if d.day else "—",
                                                             {"model": f.model, "intent": f.intent, **_day_range(d.day)}), *_traffic_cells(d)))
            for d in t.by_day)
    pairs = (card_row(("Model", "Intent", *TRAFFIC_HEADERS),
                      (filter_link(safe(p.model), {"model": p.model}) if p.model else "—",
                       filter_link(safe(p.intent), {"intent": p.intent}) if p.intent else "—", *_traffic_cells(p)))
             for p in t.by_model_intent)
    query = {k: v for k, v in (("days", str(f.days)), ("model", f.model), ("intent", f.intent)) if v}
    return (form + f'<p class="run">Model calls of the newest {len(t.days)} day(s) with spans, {min(t.days).isoformat()} '
            f"to {t.days[0].isoformat()} (UTC days). Error: OTel status ERROR or an error.type. Cost: provider list "
            "prices (verdict.models.pricing); a model without one (a local server) shows —.</p>"
            + table("Per day, newest first", ("Day", *TRAFFIC_HEADERS), days, "traffic cards")
            + table("Per model and intent, most calls first", ("Model", "Intent", *TRAFFIC_HEADERS), pairs, "traffic cards")
            + exports("/traffic", query) + '<p class="muted">The export holds one row per day, model and intent.</p>')


def _day_range(day) -> dict[str, str]:
    return {} if day is None else {"from": day.isoformat(), "to": (day + timedelta(days=1)).isoformat()}


# --- one trace ----------------------------------------------------------------------------------------------
def highlight(text: str, quotes: Iterable[str]) -> str:
    """`text` redacted and escaped, with each quoted piece of evidence that occurs in it marked."""
    out = safe(text)
    for q in sorted({safe(q) for q in quotes}, key=len, reverse=True):
        if q and q in out:
            out = out.replace(q, f"<mark>{q}</mark>")
    return out


def _messages(items: tuple[Message, ...], quotes: tuple[str, ...] = ()) -> str:
    return "".join(f'<div class="msg role-{safe(m.role)}"><p class="role">{safe(m.role)}</p>'
                   f"<pre>{highlight(m.text, quotes)}</pre></div>" for m in items)


def trace(detail: TraceDetail) -> str:
    quotes = tuple(q for j in detail.judgments for q in _QUOTED.findall(j.reason or ""))
    calls = "".join(
        f'<article class="call" id="call-{safe(c.span_id)}"><h3>Call <code>{safe(c.span_id)}</code> · {safe(c.model or "—")}</h3>'
        f'<p class="run">{_at(c.started_at)} UTC · {safe(c.provider or "—")} {safe(c.operation or "")} · latency '
        f"{_ms(c.latency_ms)} · tokens {_tokens(c.input_tokens, c.output_tokens)} · status {safe(c.status_code or '—')}"
        f"{' (' + safe(c.status_message) + ')' if c.status_message else ''} · finish "
        f"{safe(', '.join(c.finish_reasons) or '—')} · intent {safe(c.intent_key or '—')}</p>"
        + _messages(c.system) + _messages(c.inputs) + _messages(c.outputs, quotes) + "</article>"
        for c in detail.calls) or empty("No model call of this trace is in the span lake (only its judgments are).")
    return (f'<p>Trace <code>{safe(detail.trace_id)}</code></p>'
            + section("conversation", "Conversation", calls)
            + section("verdicts", "Judge verdicts", _judgments(detail))
            + section("attempts", "Judge attempts", _attempts(detail))
            + section("timeline", "Span tree", _span_tree(detail)))


def _judgments(detail: TraceDetail) -> str:
    if not detail.judgments:
        return empty("This trace has not been judged (only sampled traces are).")
    headers = ("Evaluator", "Cluster", "Dimension", "Verdict", "Rationale")
    rows = (f'<tr><td>{safe(j.evaluator or "—")} <span class="muted">{safe(j.fingerprint[:12])}</span></td>'
            f"<td>{safe(j.cluster or '—')}</td><td>{safe(j.dimension or '—')}</td>"
            f'<td><span class="badge v-{safe((j.value or "none").lower())}">{safe(j.value or "—")}</span>'
            f"{' score ' + _num(j.score) if j.score is not None else ''}"
            f"{' (' + safe(j.error_code) + ')' if j.error_code else ''}</td>"
            f'<td class="wrap">{safe(j.reason or "")}</td></tr>' for j in detail.judgments)
    return (table("Latest verdict per evaluator and dimension", headers, rows, "verdicts")
            + '<p class="legend">Quoted evidence from a rationale is <mark>highlighted</mark> in the answer.</p>')


def _attempts(detail: TraceDetail) -> str:
    if not detail.attempts:
        return empty("No judge attempt on record for this trace.")
    headers = ("Evaluator fingerprint", "Attempt", "Status", "Error", "Judged (UTC)", "Tokens", "Cost")
    rows = (f'<tr><td>{safe(a.evaluator or "—")} <code>{safe(a.fingerprint)}</code></td><td>{a.attempt_no}</td>'
            f"<td>{safe(a.status)}</td><td>{safe(a.error_code or '')} {safe(a.error_message or '')}</td>"
            f"<td>{_at(a.judged_at)}</td><td>{_tokens(a.input_tokens, a.output_tokens)}</td>"
            f"<td>{'—' if a.cost_usd is None else f'${a.cost_usd:,.4f}'}</td></tr>" for a in detail.attempts)
    return table("Every judge attempt, with its evaluator fingerprint", headers, rows, "attempts")


KIND_NAMES = {"agent": "agent", "model": "model call", "tool": "tool", "span": "span"}


def _span_tree(detail: TraceDetail) -> str:
    """The spans as nested lists (agent → model call → tool, any depth), each with its duration as a number and as
    a bar on the trace's time axis; a model call links to its messages above, a tool call shows its name,
    arguments and result (as stored: redacted, then redacted and escaped again here)."""
    if not detail.spans:
        return empty("No span of this trace is in the span lake.")
    start = min(s.start_ns for s in detail.spans)
    total = max(max(s.end_ns for s in detail.spans) - start, 1)
    calls = frozenset(c.span_id for c in detail.calls)
    out, depth = [], -1
    for node in tree(detail.spans, calls):
        s = node.span
        if node.depth > depth:
            out.append('<ol class="span-tree">' * (node.depth - depth))
        else:
            out.append("</li>" + "</ol></li>" * (depth - node.depth))
        depth = node.depth
        left, width = 100 * (s.start_ns - start) / total, max(100 * (s.end_ns - s.start_ns) / total, 0.5)
        name = (f'<a class="call-link" href="#call-{safe(s.span_id)}">{safe(s.name)}</a>' if node.kind == "model"
                else safe(s.name))
        out.append(f'<li><div class="span-node k-{node.kind}"><span class="span-name"><span class="kind-tag">'
                   f'{KIND_NAMES[node.kind]}</span> {name} <span class="span-ms">{(s.end_ns - s.start_ns) / 1e6:,.1f} ms'
                   f'</span>{" <strong>ERROR</strong>" if s.status_code == "ERROR" else ""}</span>'
                   f'<span class="span-track" aria-hidden="true"><span class="span-bar s-{safe((s.status_code or "unset").lower())}" '
                   f'style="left:{left:.2f}%;width:{min(width, 100 - left):.2f}%"></span></span></div>'
                   + (_tool_call(s) if node.kind == "tool" else ""))
    out.append("</li>" + "</ol></li>" * depth + "</ol>")
    more = (f'<p class="muted">Showing the first {len(detail.spans)} of {detail.spans_total} spans (by start).</p>'
            if detail.spans_total > len(detail.spans) else "")
    return (f'<p class="run">{len(detail.spans)} span(s) over {total / 1e6:,.1f} ms; bars on the trace\'s time axis. '
            "Model calls link to their messages.</p>" + "".join(out) + more)


def _tool_call(s: Span) -> str:
    arguments, result = pretty(s.tool_arguments), pretty(s.tool_result)
    if s.tool_name is None and arguments is None and result is None:
        return ""
    return (f'<details class="tool-call"><summary>{safe(s.tool_name or s.name)}: arguments and result</summary>'
            f'<p class="role">arguments</p><pre>{safe(arguments) if arguments is not None else "—"}</pre>'
            f'<p class="role">result</p><pre>{safe(result) if result is not None else "—"}</pre></details>')


# --- signal drill-down --------------------------------------------------------------------------------------
def signal(d: SignalDetail, talks: Mapping[str, str] | None = None) -> str:
    """The drill-down; `talks`: trace id -> conversation key of the examples that are turns of a conversation."""
    s = d.signal
    level = (lambda v: _num(v)) if d.series is None and s.kind != "coverage_drop" else pct
    delta = "—" if s.delta is None else f"{s.delta:+.3f}"
    if s.delta_low is not None and s.delta_high is not None:
        delta += f" [{s.delta_low:+.3f}, {s.delta_high:+.3f}]"
    facts = (("Kind", f'<span class="kind kind-{safe(s.kind)}">{KIND_LABELS.get(s.kind, safe(s.kind))}</span>'),
             ("Evaluator", f"{safe(d.evaluator or '—')} <span class=\"muted\">{safe(s.fingerprint[:12])}</span>"),
             ("Cluster × dimension", f"{safe(s.cluster)} × {safe(s.dimension)}"),
             ("Baseline → current (n)", f"{level(s.baseline_level)} ({s.baseline_n}) → {level(s.current_level)} "
                                        f"({s.current_n})"),
             ("Cliff's δ [95 % CI]", delta), ("p / adjusted p", f"{_num(s.p_value)} / {_num(s.adjusted_p)}"),
             ("MDE", "n/a" if d.mde is None else f"{d.mde:.3f}"),
             ("Run", f"as of {when(d.run.as_of)}; baseline {when(d.tested.baseline_start)} to "
                     f"{when(d.tested.baseline_end)}, current {when(d.tested.current_start)} to {when(d.run.as_of)}"
                     + (" (a small cell: tested over the weekly decision's windows)" if d.tested is not d.run else "")
                     + f"; alpha {d.run.alpha:g}"))
    chart = (empty("A score dimension has no daily pass rate; the signal is tested on the scores.")
             if d.series is None else
             f'<figure class="chart-box wide">{rate_chart("signal", d.series, d.tested, _domain(d.series, d), d.alarms)}'
             "<figcaption>Daily pass rate (UTC days) with its 95 % Wilson band; grey: baseline window, orange: current "
             f"window; red: the windows of the {len(d.alarms)} run(s) that raised this cell, a line where each did"
             "</figcaption></figure>")
    lo = d.run.small_cell_start if s.small_cell and d.run.small_cell_start else d.run.current_start
    counted = {"regression": "FAIL", "improvement": "PASS"}.get(s.kind)  # a coverage drop counts UNCLEAR and ERROR
    cell = {"evaluator": d.evaluator, "cluster": s.cluster, "dimension": s.dimension}
    queue = f'/review?{urlencode({"status": "all", "signal": s.signal_id})}'
    links = ('<p class="links">' + filter_link("Traces of this cell in the tested window", {
                 **cell, "verdict": counted, "from": lo.isoformat(), "to": d.run.as_of.isoformat()}, "button")
             + " · " + filter_link("every trace of this cell", cell)
             + f' · <a id="signal-queue-link" href="{safe(queue)}">label this signal\'s examples</a>'
             + ' · <a href="/signals">All signals</a></p>')
    return (links + '<dl class="summary">' + "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts) + "</dl>"
            + section("series", "Pass rate over time", chart)
            + section("examples", "Examples stored with the signal", _cell_traces(d.examples, "stored examples", talks or {}))
            + section("window", "More traces of the current window",
                      _cell_traces(d.window, "other traces of the current window with the verdict counted", talks or {})))


def _domain(series: RateSeries, d: SignalDetail) -> tuple[datetime, datetime]:
    """The cell's days and the tested windows, widened to every alarmed period."""
    start, end = time_domain((series,), d.tested)
    return min([start, *(a.start for a in d.alarms)]), max([end, *(a.raised_at for a in d.alarms)])


def _cell_traces(rows: tuple[CellTrace, ...], what: str, talks: Mapping[str, str]) -> str:
    if not rows:
        return empty(f"No {what}.")
    body = (f'<tr><td>{_at(r.started_at)}</td><td><a class="example-link" '
            f'href="{safe(trace_url(r.trace_id, r.started_at.date()))}">'
            f"<code>{safe(r.trace_id[:16])}</code></a>"
            + (f' <a class="conversation-link" href="{safe(conversation_url(talks[r.trace_id], trace=r.trace_id))}">'
               "conversation</a>" if r.trace_id in talks else "")
            + f"</td><td>{safe(r.value or '—')}</td>"
            f'<td class="wrap">{safe(r.reason or "")}</td></tr>' for r in rows)
    return table(what.capitalize(), ("Started (UTC)", "Trace", "Verdict", "Judge rationale"), body, "examples")


# --- every signal ----------------------------------------------------------------------------------------
HISTORY_HEADERS = ("Status", "Evaluator", "Cluster × dimension", "Kind", "First raised", "Last raised", "Runs",
                   "Open")


def signals_page(history: tuple[CellHistory, ...]) -> str:
    if not history:
        return empty("No drift signal yet: signals appear once a drift run finds a cell that changed.")
    rows = []
    for h in history:
        cell = {"evaluator": h.evaluator, "cluster": h.cluster, "dimension": h.dimension}
        cells = (f'<span class="status status-{h.status.split()[0]}">{safe(h.status)}</span>', safe(h.evaluator or "—"),
                 filter_link(f"{safe(h.cluster)} × {safe(h.dimension)}", cell),
                 f'<span class="kind kind-{safe(h.kind)}">{KIND_LABELS.get(h.kind, safe(h.kind))}</span>',
                 when(h.first_raised), when(h.last_raised), str(h.runs),
                 f'<a class="signal-link" href="{safe(signal_url(h.latest_signal))}">latest signal</a>')
        rows.append(card_row(HISTORY_HEADERS, cells))
    legend = ('<p class="legend">One row per cell and kind over every stored drift run. <strong>open</strong>: the '
              "evaluator's latest closing decision raised it; <strong>early look only</strong>: only runs after that "
              "decision raised it; <strong>no longer raised</strong>: the latest closing decision did not (the cell "
              "recovered, or its level is now the baseline it is compared with). Runs: how many runs raised it.</p>")
    return (legend + table("Drift signals by cell, open first", HISTORY_HEADERS, rows, "history cards")
            + exports("/signals", {}))


def related(intents: tuple[str, ...], clusters: tuple[tuple[str | None, str], ...], signals: tuple[TraceSignal, ...],
            items: tuple[str, ...], conversation: tuple[str, str] | None = None) -> str:
    """Where a trace leads: its conversation (key, trace), its intent's and clusters' traces, the signals of its
    cells, its review items."""
    talk = (f'<a class="conversation-link" href="{safe(conversation_url(conversation[0], trace=conversation[1]))}">'
            f"<code>{safe(conversation[0])}</code></a>" if conversation else "")
    parts = [("Conversation", talk), ("Intent", " ".join(filter_link(safe(i), {"intent": i}) for i in intents)),
             ("Cluster", " ".join(filter_link(f"{safe(c)} <small>({safe(e or '—')})</small>", {"evaluator": e, "cluster": c})
                                  for e, c in clusters)),
             ("Signals", " ".join(f'<a class="signal-link" href="{safe(signal_url(g.signal_id))}">'
                                  f"{KIND_LABELS.get(g.kind, safe(g.kind))} {safe(g.cluster)} × {safe(g.dimension)} "
                                  f"<small>{when(g.as_of)}{', example' if g.example else ''}</small></a>" for g in signals)),
             ("Review", " ".join(f'<a class="item-link" href="/review/{quote(i, safe="")}"><code>{safe(i[:16])}</code></a>'
                                 for i in items))]
    return ('<dl class="related">' + "".join(f"<div><dt>{k}</dt><dd>{v or '—'}</dd></div>" for k, v in parts) + "</dl>")


# --- review ------------------------------------------------------------------------------------------------
def agreement(groups: tuple[EvaluatorAgreement, ...], level: int = 3) -> str:
    """The agreement tables under a heading of `level` (2 where no section heading precedes it)."""
    if not groups:
        return empty("No labels yet: judge–human agreement appears once reviewers have labelled items.")
    out = []
    headers = ("Dimension", "Items", "Raw agreement [95 % CI]", "Cohen's κ", "Gwet's AC1 [95 % CI]", "TPR (FAIL)",
               "TNR", "Reviewers among themselves: AC1 [95 % CI]")
    for g in groups:
        rows = []
        for d in g.dimensions:
            r, h = d.report, d.humans
            head = (f'<th scope="row">{safe(d.dimension)}</th>'
                    f'<td data-label="{headers[1]}" class="agreement-n">{r.n_items}</td>')
            if r.n_items < MIN_AGREEMENT_ITEMS:  # an interval over a handful of items says nothing yet
                rows.append(f'<tr>{head}<td colspan="{len(headers) - 2}" class="insufficient">insufficient data: '
                            f"{r.n_items} of the {MIN_AGREEMENT_ITEMS} labelled items shown figures need</td></tr>")
                continue
            ac1 = "—" if r.ac1 is None else f"{r.ac1.value:.2f} [{r.ac1.low:.2f}, {r.ac1.high:.2f}]"
            humans = ("—" if h.gwet_ac1 is None else f"{h.gwet_ac1.value:.2f} [{h.gwet_ac1.low:.2f}, {h.gwet_ac1.high:.2f}]"
                      ) + f" ({h.n_pairable} shared, {safe(h.status.replace('_', ' '))})"
            cells = (_prop(r.raw_agreement), "—" if r.kappa is None else f"{r.kappa.value:.2f}", ac1, _prop(r.tpr),
                     _prop(r.tnr), humans)
            rows.append(card_row(headers[2:], cells, head))
        name = safe(g.name) if g.name else f"fingerprint {safe(g.fingerprint[:12])}"
        out.append(table(f"Judge–human agreement, evaluator {name}", headers, rows, "agreement cards"))
    return (f"<h{level}>Judge–human agreement</h{level}>" + "".join(out)
            + f'<p class="legend">Figures are shown from {MIN_AGREEMENT_ITEMS} labelled items per dimension.</p>')


def _prop(p) -> str:
    if p.trials == 0:
        return "—"
    return f"{pct(p.value)} [{pct(p.low)}, {pct(p.high)}] of {p.trials}"


def review_list(page_: ItemPage, query: dict[str, str], counts: Panel, next_id: str | None, agreement_html: str) -> str:
    """The queue, or with `signal` in `query` the queue of that signal's example traces."""
    status, signal = query["status"], query.get("signal")
    tabs = "".join(f'<a href="/review?{safe(urlencode({**query, "status": s}))}"{_CURRENT if s == status else ""}>{s}</a> '
                   for s in ("pending", "labelled", "all"))
    start = (f'<p><a class="button" id="next-item" href="{safe(item_url(next_id, signal))}">Label the next item '
             "(priority order)</a></p>" if next_id else empty("Nothing pending: every queued item has a label."))
    headers = ("Queued (UTC)", "Item", "Reasons", "Evaluator", "Intent", "Labelled dimensions")
    rows = (card_row(headers, (safe(i.queued_at[:19]), f'<a class="item-link" href="{safe(item_url(i.item_id, signal))}">'
                                f"<code>{safe(i.item_id[:16])}</code></a>",
                                ", ".join(safe(REASON_LABELS.get(r, r)) for r in i.reasons),
                                safe(i.evaluator or i.fingerprint[:12]), safe(i.intent_key or "—"), str(i.labelled_dimensions)))
            for i in page_.items)
    listing = (table(f"{status.capitalize()} items, newest first ({page_.total:,})", headers, rows, "queue cards")
               if page_.items else empty(f"No {status} item."))
    nav = []
    if page_.offset > 0:
        nav.append(f'<a href="/review?{safe(urlencode({**query, "offset": max(page_.offset - page_.limit, 0)}))}">'
                   "Previous</a>")
    if page_.offset + len(page_.items) < page_.total:
        nav.append(f'<a rel="next" href="/review?{safe(urlencode({**query, "offset": page_.offset + page_.limit}))}">'
                   "Next</a>")
    scope = "" if signal is None else _signal_scope(signal, page_)
    # Inside a signal's queue the counts are still the whole queue's: its title says so (the list is the signal's)
    title = "Review queue" if signal is None else "The whole review queue (every item, not only this signal's)"
    return (scope + start + panel(counts, title, "panel compact") + f'<p class="tabs">Show: {tabs}</p>' + listing
            + (f'<p>{" · ".join(nav)}</p>' if nav else "")
            + (exports("/review", {**query, "offset": str(page_.offset)}) if page_.items else "") + agreement_html)


def _signal_scope(signal: str, page_: ItemPage) -> str:
    """What the filtered queue holds, and, when the signal's examples have no item, how items get queued."""
    back = f'<a href="{safe(signal_url(signal))}">the signal</a>'
    if page_.total or page_.offset:
        return (f'<p class="scope" id="signal-queue">Only the review items of the traces stored as examples of {back} '
                '· <a href="/review">the whole queue</a></p>')
    return ('<p class="scope empty" id="signal-queue">None of the traces stored as examples of '
            f"{back} is in the review queue (in this tab). Items are queued by the daemon after each judge run: "
            "judgments with an UNCLEAR, split (ensemble) or inconsistent verdict, and a random audit sample of confident "
            "ones (<code>[review] audit_rate</code>, docs/review.md). Open the examples from the signal page to read "
            'them, or <a href="/review">label the whole queue</a>.</p>')


def reviewer_form(csrf: str, back: str) -> str:
    return (f'<form method="post" action="/reviewer" class="stack reviewer">{hidden_csrf(csrf)}'
            f'<input type="hidden" name="next" value="{safe(back)}">'
            '<label for="reviewer">Your name (recorded with every label)</label>'
            '<input id="reviewer" name="reviewer" required pattern="[A-Za-z0-9][A-Za-z0-9._@+\\-]{0,63}" '
            'autocomplete="username"><button type="submit">Start reviewing</button></form>')


def review_item(d: ItemDetail, reviewer: str | None, csrf: str, agreement_html: str, next_id: str | None,
                described: Mapping[str, str], signal: str | None = None, conversation: str | None = None) -> str:
    """One item to label; `signal`: opened from that signal's queue (the next item is one of its examples');
    `conversation`: the key of the conversation its trace is a turn of."""
    s = d.item
    mine = [r for r in d.labels if r.reviewer == reviewer]
    # The trace and conversation pages show the judge's verdicts: linked only once the reviewer has labelled
    # (blind labelling).
    trace = (f'<a href="{safe(trace_url(s.trace_id))}"><code>{safe(s.trace_id[:16])}</code></a>' if mine
             else f"<code>{safe(s.trace_id[:16])}</code>")
    if mine and conversation:
        trace += (f' · <a class="conversation-link" href="{safe(conversation_url(conversation, trace=s.trace_id))}">'
                  "its conversation</a>")
    head = (f'<p class="review-head">{", ".join(safe(REASON_LABELS.get(r, r)) for r in s.reasons)} · evaluator '
            f"<code>{safe(s.evaluator or s.fingerprint[:12])}</code> · intent {safe(s.intent_key or '—')} · "
            f"trace {trace}</p>")
    conversation = _judged_item(d)
    dimensions = [j for j in d.judgments if j.verdict is not None]
    if reviewer is None:
        action = reviewer_form(csrf, item_url(s.item_id, signal))  # back to this item, inside the signal's queue
    else:
        action = _label_form(d, dimensions, csrf, reviewer, bool(mine), described, item_url(s.item_id, signal, "/labels"))
    judge = (_judge_view(d, mine) + agreement_html if mine else
             '<p class="empty" id="blind">The judge\'s verdicts stay hidden until you have labelled this item '
             "(blind labelling: the judge must not anchor you).</p>")
    following = (f'<p><a class="button" id="next-item" href="{safe(item_url(next_id, signal))}" accesskey="n">'
                 f"{'Next item' if mine else 'Skip to the next item'} (n)</a></p>" if next_id else
                 '<p class="muted">No other pending item.</p>')
    return (head + section("item-conversation", "Conversation", conversation) + section("label", "Your labels", action)
            + section("judge", "The judge's view", judge) + following)


def _judged_item(d: ItemDetail) -> str:
    """The item as its judge was shown it, in the judge's order: the conversation so far, the context and question,
    the tool trajectory, then the graded answer; the background under headings of its own, apart from the answer."""
    def message(role: str, text: str) -> str:
        return f'<div class="msg role-{role}"><p class="role">{role}</p><pre>{safe(text)}</pre></div>'

    def background(key: str, title: str, text: str) -> str:
        return (f'<section class="background" id="{key}" aria-labelledby="{key}-h"><h3 id="{key}-h">{title} '
                f'<span class="muted">(shown to the judge as background, not graded)</span></h3>'
                f'<pre>{safe(text)}</pre></section>')

    question = (message("context", d.context) if d.context else "") + message("user", d.query)
    if not (d.history or d.trajectory):
        return question + message("assistant", d.response)
    return ((background("judged-history", "Conversation so far", d.history) if d.history else "")
            + '<section id="judged-question" aria-labelledby="judged-question-h"><h3 id="judged-question-h">'
            f"This turn</h3>{question}</section>"
            + (background("judged-trajectory", "Tool trajectory", d.trajectory) if d.trajectory else "")
            + '<section id="judged-answer" aria-labelledby="judged-answer-h"><h3 id="judged-answer-h">'
            f'The graded answer</h3>{message("assistant", d.response)}</section>')


LABEL_CHOICES = ("PASS", "FAIL", "UNCLEAR")  # UNCLEAR: the reviewer cannot tell; nothing is recorded for it


def _label_form(d: ItemDetail, dimensions, csrf: str, reviewer: str, relabel: bool, described: Mapping[str, str],
                action: str) -> str:
    if not dimensions:
        return empty("The judge gave no PASS/FAIL verdict on this item, so there is nothing to label.")
    fields = []
    for i, j in enumerate(dimensions):
        name = f"label.{j.dimension}"
        current = d.latest.get(j.dimension)
        mine = current.label if current is not None and current.reviewer == reviewer else None
        radios = "".join(
            f'<label class="choice"><input type="radio" name="{safe(name)}" value="{v}" required'
            f'{" checked" if mine == v else ""}> {v} <kbd>{v[0].lower()}</kbd></label>' for v in LABEL_CHOICES)
        about = described.get(j.dimension)  # the rubric's own wording: what the judge was asked to check
        what = (f'<p class="dimension-description muted">{safe(about)}</p>' if about else
                '<p class="dimension-description muted">(the evaluator\'s definition describes no such dimension)</p>')
        fields.append(f'<fieldset class="dimension" data-index="{i}"><legend>{safe(j.dimension)}'
                      f'{" ⚑ flagged" if j.dimension in d.item.flagged else ""}</legend>{what}{radios}</fieldset>')
    verb = "Relabel" if relabel else "Save labels"
    return (f'<form method="post" action="{safe(action)}" id="label-form" '
            f'class="stack">{hidden_csrf(csrf)}<p class="muted">Labelling as <code>{safe(reviewer)}</code>. Keys: '
            "<kbd>p</kbd> PASS, <kbd>f</kbd> FAIL, <kbd>u</kbd> UNCLEAR on the current dimension (then the next one), "
            "<kbd>j</kbd>/<kbd>k</kbd> move, <kbd>c</kbd> critique, <kbd>Enter</kbd> in the critique saves, "
            "<kbd>n</kbd> skips to the next item. UNCLEAR leaves a dimension unlabelled (no label is recorded for it, "
            "so it counts nowhere); all UNCLEAR moves on to the next item.</p>"
            + "".join(fields)
            + '<label for="critique">Critique (one line; required when a label is FAIL)</label><input id="critique" '
            f'name="critique" maxlength="500" autocomplete="off"><button type="submit">{verb}</button></form>')


def _judge_view(d: ItemDetail, mine) -> str:
    latest = {r.dimension: r for r in mine}
    rows = []
    for j in d.judgments:
        human = latest.get(j.dimension)
        agree = ("" if human is None or j.verdict not in ("PASS", "FAIL") else
                 "agree" if human.label == j.verdict else "disagree")  # UNCLEAR is no verdict to agree with
        rows.append(f'<tr><th scope="row">{safe(j.dimension)}</th><td>{safe(j.verdict or _num(j.score))}</td>'
                    f"<td>{safe(human.label) if human else '—'}</td><td class=\"{agree}\">{agree or '—'}</td>"
                    f'<td class="wrap">{safe(j.rationale or "")}</td></tr>')
    return table("The judge's verdict against yours", ("Dimension", "Judge", "You", "Agreement", "Judge rationale"), rows,
                 "judge-view")



# --- conversations -----------------------------------------------------------------------------------------
CONVERSATION_HEADERS = ("Last turn (UTC)", "Conversation", "Turns · calls · tokens", "Intent (first turn)", "Status",
                        "First turn")


def conversations(f: ConversationFilter, result: ConversationPage, values: Facets) -> str:
    form = ('<form method="get" action="/conversations" class="filters" role="search" aria-label="Filter conversations">'
            + _select("status", "Status", f.status, STATUSES) + _select("intent", "Intent (any turn)", f.intent, values.intents)
            + '<div class="field"><button type="submit">Filter</button> <a href="/conversations">Clear</a></div></form>')
    rows = (card_row(CONVERSATION_HEADERS, (
        _at(r.last_time),
        f'<a class="conversation-link" href="{safe(conversation_url(r.conversation_id, r.conversation_seq))}">'
        f"<code>{safe(r.conversation_id)}</code></a> <small>#{r.conversation_seq}</small>",
        f"{r.turns} · {r.calls} · {_tokens(r.input_tokens, r.output_tokens)}",
        filter_link(safe(r.intent_key), {"intent": r.intent_key}) if r.intent_key else "—",
        safe(r.status) + (f" <small>({safe(r.closed_by.replace('_', ' '))})</small>" if r.closed_by else ""),
        f'<a class="trace-link" href="{safe(trace_url(r.first_trace_id, r.first_time.date()))}">'
        f"<code>{safe(r.first_trace_id[:16])}</code></a>")) for r in result.rows)
    listing = (table("Conversations, latest turn first", CONVERSATION_HEADERS, rows, "conversations cards")
               if result.rows else empty(
                   "No conversation matches these filters." if f.status or f.intent else
                   "No conversation in the span lake yet: traces join one through gen_ai.conversation.id or a vendor "
                   "spelling (docs/conversations.md)."))
    nav = []
    if f.offset:
        nav.append(f'<a href="/conversations?{safe(urlencode(f.query_string(offset=str(max(f.offset - PAGE_SIZE, 0)))))}">'
                   "Previous</a>")
    if result.more:
        nav.append(f'<a rel="next" href="/conversations?{safe(urlencode(f.query_string(offset=str(f.offset + PAGE_SIZE))))}">'
                   "Next</a>")
    legend = ('<p class="legend">A conversation is the turns (traces) of one key until 30 minutes without a turn or an '
              "end marker; status is against the newest span in the lake (docs/conversations.md).</p>")
    return (form + legend + listing + (f'<p>{" · ".join(nav)}</p>' if nav else "")
            + (exports("/conversations", f.query_string()) if result.rows else ""))


def conversation(d: ConversationDetail) -> str:
    c = d.summary
    others = " ".join(f'<a href="{safe(conversation_url(c.conversation_id, s))}"{_CURRENT if s == c.conversation_seq else ""}>'
                      f"#{s}</a>" for s in d.seqs)
    facts = (("Key", f"<code>{safe(c.conversation_id)}</code>"),
             ("Conversation of this key", others),
             ("Status", safe(c.status) + (f" ({safe(c.closed_by.replace('_', ' '))})" if c.closed_by else "")),
             ("First · last turn (UTC)", f"{_at(c.first_time)} · {_at(c.last_time)}"),
             ("Turns · calls · tokens", f"{c.turns} · {c.calls} · {_tokens(c.input_tokens, c.output_tokens)}"),
             ("Intent (first turn)", filter_link(safe(c.intent_key), {"intent": c.intent_key}) if c.intent_key else "—"))
    summary_ = '<dl class="summary">' + "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts) + "</dl>"
    if not d.verdicts:
        whole = empty("No conversation evaluator has judged this conversation: an evaluator with unit = "
                      "\"conversation\" judges closed, sampled ones as a whole (resolved, frustration, consistency; "
                      "docs/conversations.md).")
    else:
        whole = _verdict_table(d.verdicts, "Latest verdict per evaluator and dimension, on the whole conversation")
    turns = "".join(_turn(t) for t in d.turns)
    cut = (f'<p class="muted">Showing the first {len(d.turns)} of {c.turns} turns.</p>' if c.turns > len(d.turns) else "")
    return (summary_ + section("conversation-verdicts", "Conversation verdicts", whole)
            + section("turns", "Turns, in order", turns + cut))


def _turn(t: Turn) -> str:
    counted: dict[str, int] = {}
    for j in t.judgments:
        counted[j.value or "—"] = counted.get(j.value or "—", 0) + 1
    links = " · ".join([f'<a class="trace-link" href="{safe(trace_url(t.trace_id, t.started_at.date()))}">trace '
                        f"<code>{safe(t.trace_id[:16])}</code></a>",
                        *(f'<a class="signal-link" href="{safe(signal_url(s))}">signal <code>{safe(s[:12])}</code></a>'
                          for s in t.signals),
                        *(f'<a class="item-link" href="{safe(item_url(i))}">review item <code>{safe(i[:12])}</code></a>'
                          for i in t.items)])
    verdicts = (f"<details><summary>{_badges(counted)}</summary>{_verdict_table(t.judgments, 'This turn’s latest verdicts')}"
                "</details>" if t.judgments else _badges({}))
    return (f'<article class="call turn" id="turn-{t.turn}"><h3>Turn {t.turn}</h3>'
            f'<p class="run">{_at(t.started_at)} UTC · {safe(t.intent_key or "—")} · {t.calls} call(s) · '
            f"{_tokens(t.input_tokens, t.output_tokens)}{' · end marker' if t.end_marker else ''}</p><p>{links}</p>"
            f'<div class="turn-verdicts">{verdicts}</div>'
            + _messages((Message("user", t.question or "—"), Message("assistant", t.answer or "—"))) + "</article>")


VERDICT_HEADERS = ("Evaluator", "Dimension", "Verdict", "Rationale")


def _verdict_table(judgments, caption: str) -> str:
    rows = (card_row(VERDICT_HEADERS, (
        safe(j.evaluator or "—"), safe(j.dimension or "—"),
        f'<span class="badge v-{safe((j.value or "none").lower())}">{safe(j.value or "—")}</span>'
        f"{' score ' + _num(j.score) if j.score is not None else ''}", safe(j.reason or ""))) for j in judgments)
    return table(caption, VERDICT_HEADERS, rows, "verdicts cards")
