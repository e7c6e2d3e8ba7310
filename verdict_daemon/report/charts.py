"""Inline SVG charts (no script, no external resource): daily pass rate with its Wilson band and the
drift windows shaded, and daily judge tokens. Each chart has a <title> and <desc> for screen readers
and a <title> per point (tooltip with the exact counts)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from verdict_daemon.report.escape import safe
from verdict_daemon.report.model import AlarmPeriod, DriftWindows, RateSeries, SpendDay

WIDTH, HEIGHT = 320, 170
LEFT, RIGHT, TOP, BOTTOM = 36, 10, 12, 28
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


def pct(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{100 * value:.{digits}f} %"


def _midday(day: date) -> datetime:
    return datetime.combine(day, time(12))


def time_domain(series: tuple[RateSeries, ...], run: DriftWindows | None) -> tuple[datetime, datetime]:
    """One x range for every chart of an evaluator (so charts line up): its days plus the run's windows."""
    days = [p.day for s in series for p in s.points]
    start = datetime.combine(min(days), time())
    end = datetime.combine(max(days), time()) + timedelta(days=1)
    if run is not None:
        start, end = min(start, run.baseline_start), max(end, run.as_of)
    return start, end


class _Scale:
    def __init__(self, domain: tuple[datetime, datetime]) -> None:
        self.start = domain[0]
        self.span = max((domain[1] - domain[0]).total_seconds(), 1.0)

    def x(self, at: datetime) -> float:
        return LEFT + PLOT_W * min(max((at - self.start).total_seconds() / self.span, 0.0), 1.0)

    @staticmethod
    def y(rate: float) -> float:
        return TOP + PLOT_H * (1 - rate)


def _svg(chart_id: str, css_class: str, title: str, desc: str, body: list[str]) -> str:
    return (f'<svg class="{css_class}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-labelledby="{chart_id}-t {chart_id}-d" xmlns="http://www.w3.org/2000/svg">'
            f'<title id="{chart_id}-t">{title}</title><desc id="{chart_id}-d">{desc}</desc>'
            + "".join(body) + "</svg>")


def _window(scale: _Scale, start: datetime, end: datetime, css_class: str, label: str, title: str) -> str:
    x0, x1 = scale.x(start), scale.x(end)
    return (f'<g class="{css_class}"><rect x="{x0:.1f}" y="{TOP}" width="{max(x1 - x0, 1):.1f}" height="{PLOT_H}">'
            f'<title>{title}</title></rect><text x="{(x0 + x1) / 2:.1f}" y="{TOP + PLOT_H - 4}" text-anchor="middle">'
            f"{label}</text></g>")


MAX_DAY_LABELS = 6  # dates written under the x axis: enough to read a day off, few enough not to overlap


def _axes(scale: _Scale, domain: tuple[datetime, datetime]) -> list[str]:
    out = []
    for rate in (0.0, 0.5, 1.0):
        y = scale.y(rate)
        out.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{LEFT - 4}" y="{y + 3:.1f}" text-anchor="end">{int(rate * 100)}%</text>')
    first, last = domain[0].date(), (domain[1] - timedelta(seconds=1)).date()
    days = (last - first).days + 1
    step = -(-days // MAX_DAY_LABELS)  # ceil: every step-th day is labelled, from the first
    for offset in range(0, days, step):
        day = first + timedelta(days=offset)
        x = scale.x(datetime.combine(day, time()))
        labelled = offset == 0 or (last - day).days >= step  # the last label sits at the right edge, none near it
        out.append(f'<line class="day-tick" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + PLOT_H}" y2="{TOP + PLOT_H + 3}"/>')
        if labelled:
            out.append(f'<text class="tick" x="{x:.1f}" y="{HEIGHT - 8}" text-anchor="{"start" if offset == 0 else "middle"}">'
                       f"{day:%m-%d}</text>")
    out.append(f'<text class="tick" x="{scale.x(domain[1]):.1f}" y="{HEIGHT - 8}" text-anchor="end">{last:%m-%d}</text>')
    return out


def _alarms(scale: _Scale, alarms: tuple[AlarmPeriod, ...]) -> list[str]:
    """A red strip over each tested window whose run raised the cell, and a tick at the moment it did."""
    out = []
    for a in alarms:
        x0, x1 = scale.x(a.start), scale.x(a.raised_at)
        what = "closing decision" if a.closing else "early look"
        out.append(f'<g class="alarm"><title>raised by the {what} as of {a.raised_at:%Y-%m-%d %H:%M} UTC (tested '
                   f'{a.start:%Y-%m-%d %H:%M} to {a.raised_at:%Y-%m-%d %H:%M})</title>'
                   f'<rect x="{x0:.1f}" y="{TOP}" width="{max(x1 - x0, 1):.1f}" height="5"/>'
                   f'<line x1="{x1:.1f}" x2="{x1:.1f}" y1="{TOP}" y2="{TOP + PLOT_H}"/></g>')
    return out


def rate_chart(chart_id: str, series: RateSeries, run: DriftWindows | None,
               domain: tuple[datetime, datetime], alarms: tuple[AlarmPeriod, ...] = ()) -> str:
    """Daily pass rate (PASS / (PASS + FAIL)) with the 95 % Wilson band; baseline and current windows shaded;
    `alarms`: the windows of runs that raised this cell, marked in red."""
    scale = _Scale(domain)
    body = _axes(scale, domain) + _alarms(scale, alarms)
    if run is not None:
        body.append(_window(scale, run.baseline_start, run.baseline_end, "win-baseline", "baseline",
                            f"baseline window {run.baseline_start:%Y-%m-%d %H:%M} to {run.baseline_end:%Y-%m-%d %H:%M} UTC"))
        body.append(_window(scale, run.current_start, run.as_of, "win-current", "current",
                            f"current window {run.current_start:%Y-%m-%d %H:%M} to {run.as_of:%Y-%m-%d %H:%M} UTC"))
    pts = series.points
    xs = [scale.x(_midday(p.day)) for p in pts]
    upper = " ".join(f"{x:.1f},{scale.y(p.high):.1f}" for x, p in zip(xs, pts, strict=True))
    lower = " ".join(f"{x:.1f},{scale.y(p.low):.1f}" for x, p in zip(reversed(xs), reversed(pts), strict=True))
    body.append(f'<polygon class="band" points="{upper} {lower}"><title>95 % Wilson interval</title></polygon>')
    body.extend(f'<line class="whisker" x1="{x:.1f}" x2="{x:.1f}" y1="{scale.y(p.low):.1f}" y2="{scale.y(p.high):.1f}"/>'
                for x, p in zip(xs, pts, strict=True))
    line = " ".join(f"{x:.1f},{scale.y(p.rate):.1f}" for x, p in zip(xs, pts, strict=True))
    body.append(f'<polyline class="rate-line" points="{line}"/>')
    body.extend(f'<circle class="point" cx="{x:.1f}" cy="{scale.y(p.rate):.1f}" r="2.6"><title>{p.day}: '
                f"{p.passed}/{p.usable} PASS = {pct(p.rate)} (95 % Wilson {pct(p.low)} to {pct(p.high)})</title></circle>"
                for x, p in zip(xs, pts, strict=True))
    last = pts[-1]
    title = f"Pass rate of {safe(series.dimension)} in {safe(series.cluster)}"
    desc = (f"Daily pass rate over {len(pts)} day(s) from {pts[0].day} to {last.day}, "
            f"{sum(p.usable for p in pts)} PASS/FAIL verdicts. Last day {last.day}: {pct(last.rate)} "
            f"({last.passed}/{last.usable}, 95 % Wilson {pct(last.low)} to {pct(last.high)}).")
    if alarms:
        desc += f" Raised by {len(alarms)} drift run(s), the last as of {alarms[-1].raised_at:%Y-%m-%d %H:%M} UTC."
    return _svg(chart_id, "chart rate-chart", title, desc, body)


def tokens_chart(chart_id: str, days: tuple[SpendDay, ...]) -> str:
    """Judge tokens per UTC day of judging: input and output stacked."""
    top = max(d.input_tokens + d.output_tokens for d in days) or 1
    slot = PLOT_W / len(days)
    bar = max(min(slot * 0.7, 40), 1)
    body = [f'<line class="grid" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{TOP + PLOT_H}" y2="{TOP + PLOT_H}"/>',
            f'<text class="tick" x="{LEFT - 4}" y="{TOP + 3}" text-anchor="end">{_short(top)}</text>',
            f'<text class="tick" x="{LEFT - 4}" y="{TOP + PLOT_H + 3}" text-anchor="end">0</text>']
    for i, d in enumerate(days):
        x = LEFT + slot * i + (slot - bar) / 2
        h_in, h_out = PLOT_H * d.input_tokens / top, PLOT_H * d.output_tokens / top
        base = TOP + PLOT_H
        tip = f"{d.day}: {d.input_tokens:,} input + {d.output_tokens:,} output tokens, ${d.cost_usd:,.4f}"
        body.append(f'<g class="bar"><title>{tip}</title>'
                    f'<rect class="bar-in" x="{x:.1f}" y="{base - h_in:.1f}" width="{bar:.1f}" height="{h_in:.1f}"/>'
                    f'<rect class="bar-out" x="{x:.1f}" y="{base - h_in - h_out:.1f}" width="{bar:.1f}" '
                    f'height="{h_out:.1f}"/></g>')
    for d, anchor, x in ((days[0], "start", LEFT), (days[-1], "end", LEFT + PLOT_W)):
        body.append(f'<text class="tick" x="{x}" y="{HEIGHT - 8}" text-anchor="{anchor}">{d.day:%m-%d}</text>')
    total = sum(d.input_tokens + d.output_tokens for d in days)
    desc = (f"Judge tokens per day over {len(days)} day(s) from {days[0].day} to {days[-1].day}: "
            f"{total:,} tokens in total, at most {top:,} in one day.")
    return _svg(chart_id, "chart tokens-chart", "Judge tokens per day (input and output)", desc, body)


def _short(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)
