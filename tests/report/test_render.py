"""The rendered page: escaped and redacted content, self-contained (nothing a browser would fetch),
accessible colours, explanatory empty states."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from importlib import resources

import pytest

from tests.report.conftest import HOSTILE_ANSWER, HOSTILE_QUERY
from verdict_daemon.report import build_report
from verdict_daemon.report.palette import contrast_ratio, rate_colour, text_on
from verdict_daemon.report.render import render

AT = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of the document."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str, css_class: str | None = None) -> list[dict]:
        return [a for t, a in self.tags if t == tag and (css_class is None or css_class in (a.get("class") or "").split())]


@pytest.fixture(scope="module")
def acme(lake) -> str:
    return render(build_report(lake.data_dir, "acme", generated_at=AT))


def test_conversation_and_rationale_markup_is_escaped_and_redacted(acme):
    assert "<script" not in acme and "<img" not in acme and "<i>" not in acme
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in acme  # shown as text, in the example
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in acme
    assert "&lt;i&gt;so it is FAIL&lt;/i&gt;" in acme  # the judge's rationale, as text
    assert "bob@example.com" not in acme and "Mail &lt;EMAIL&gt; with your order number" in acme
    text = "".join(Elements(acme).text)  # what a reader sees: the original characters, redacted
    assert HOSTILE_QUERY in text and HOSTILE_ANSWER.replace("bob@example.com", "<EMAIL>") in text


def test_names_from_state_are_escaped_everywhere(lake):
    data = build_report(lake.data_dir, "acme", generated_at=AT)
    evil = '<b onmouseover="x()">search</b>'
    section = data.evaluators[0]
    section = dataclasses.replace(
        section, name=evil,
        series=tuple(dataclasses.replace(s, cluster=evil) for s in section.series),
        heatmap=tuple(dataclasses.replace(c, cluster=evil) for c in section.heatmap),
        signals=tuple(dataclasses.replace(s, signal=dataclasses.replace(s.signal, cluster=evil, dimension=evil))
                      for s in section.signals),
        coverage=tuple(dataclasses.replace(c, cluster=evil) for c in section.coverage))
    page = render(dataclasses.replace(data, evaluators=(section,)))
    assert "<b " not in page and "&lt;b onmouseover=&quot;x()&quot;&gt;search&lt;/b&gt;" in page
    assert not [a for _, a in Elements(page).tags if any(k.startswith("on") for k in a)]


def test_the_page_is_self_contained(acme):
    """No script, no external resource: nothing the browser could fetch, and a CSP that forbids it anyway."""
    elements = Elements(acme)
    assert {t for t, _ in elements.tags}.isdisjoint({"script", "img", "iframe", "link", "object", "embed", "image", "use"})
    for _, attrs in elements.tags:
        assert not {"src", "srcset"} & set(attrs)
        assert (attrs.get("href") or "#").startswith("#")
        assert not [k for k in attrs if k.startswith("on")]
    assert "url(" not in acme and "@import" not in acme
    [csp] = [a["content"] for a in elements.all("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in csp


def test_semantic_structure(acme):
    elements = Elements(acme)
    assert len(elements.all("h1")) == 1 and len(elements.all("h2")) == 7
    assert all(a.get("scope") in ("col", "row") for a in elements.all("th"))
    charts = elements.all("svg", "rate-chart")
    assert len(charts) == 20 and all(a.get("role") == "img" and a.get("aria-labelledby") for a in charts)
    assert len(elements.all("td", "heat-cell")) == 20  # 4 clusters x (4 rubric + 1 graph dimensions)
    assert all(a.get("aria-label") for a in elements.all("td", "heat-cell"))
    assert len(elements.all("details", "example")) - len(elements.all("details", "review")) == 10  # 5 per signal
    assert all(a.get("role") == "region" and a.get("tabindex") == "0" for a in elements.all("div", "table-wrap"))


def test_rendering_is_deterministic(lake, acme):
    assert render(build_report(lake.data_dir, "acme", generated_at=AT)) == acme


def test_heatmap_text_meets_wcag_aa_on_every_colour_of_the_scale():
    worst = min(contrast_ratio(text_on(rate_colour(r / 100)), rate_colour(r / 100)) for r in range(101))
    assert worst >= 4.5
    assert rate_colour(0.0) == "#b35806" and rate_colour(1.0) == "#542788" and rate_colour(0.5) == "#f7f7f7"


def test_stylesheet_text_colours_meet_wcag_aa():
    """Every CSS rule that sets a text colour: >= 4.5:1 against its own background (white when it sets none)."""
    css = resources.files("verdict_daemon.report").joinpath("assets/report.css").read_text()
    variables = dict(re.findall(r"(--[\w-]+):\s*(#[0-9a-f]{6})", css))

    def prop(body: str, name: str) -> str | None:
        found = re.search(rf"(?<![\w-]){name}:\s*([^;]+);", body)
        value = found.group(1).strip() if found else None
        return variables[value[4:-1]] if value and value.startswith("var(") else value

    checked = 0
    for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        fg = prop(body, "color") or (prop(body, "fill") if selector.strip().endswith("text") else None)
        if fg is None:
            continue
        bg = prop(body, "background") or "#ffffff"
        assert contrast_ratio(fg, bg) >= 4.5, (selector.strip(), fg, bg)
        checked += 1
    assert checked >= 8


def test_an_empty_tenant_explains_every_panel(lake):
    page = render(build_report(lake.data_dir, "globex", generated_at=AT))
    elements = Elements(page)
    empties = elements.all("p", "empty")
    assert len(empties) == 8  # signals, heatmap, rates, coverage, sentinel, probes, review, spend
    text = " ".join(elements.text)
    assert "No drift run yet" in text and "Nothing has been judged for this tenant yet" in text
    assert "No sentinel health check on record" in text and "No probe results:" in text
    assert "No judge calls on record yet" in text
    assert not elements.all("svg") and not elements.all("table")


def test_secrets_anywhere_in_state_are_redacted_on_the_page(lake):
    """State holds redacted content; the page redacts again whatever slipped through: an API key and a phone
    number planted in an example's conversation and rationale, a sentinel reason and a probe-panel cell."""
    from verdict_daemon.report.model import Panel

    key, phone = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf", "+1 415 555 0132"
    data = build_report(lake.data_dir, "acme", generated_at=AT)
    section = next(e for e in data.evaluators if e.signals)
    signal = section.signals[0]
    example = dataclasses.replace(signal.examples[0], query=f"call me on {phone}", response=f"use {key}",
                                  reason=f"the answer leaks {key} and {phone}")
    section = dataclasses.replace(section, signals=(dataclasses.replace(signal, examples=(example,)),))
    page = render(dataclasses.replace(
        data, evaluators=(section,), sentinel=tuple(dataclasses.replace(s, reason=f"provider said {key}")
                                                    for s in data.sentinel),
        probes=Panel(((f"run {phone}", f"target error {key}"),), ("Run", "Error"), None)))
    assert key not in page and phone not in page
    assert page.count("&lt;API_KEY&gt;") == 4 and page.count("&lt;PHONE&gt;") == 3


def test_an_early_look_without_signals_never_reads_as_the_closing_decisions_problem_gone(lake):
    """Under a closing decision's regression, a later early look that tested no cell (or found nothing yet)
    says what it is: it tested nothing / only part of the open period, and the decision above stands."""
    from verdict_daemon.report.render import panels

    data = build_report(lake.data_dir, "acme", generated_at=AT)
    section = next(e for e in data.evaluators if e.run is not None and e.signals)
    assert section.run is not None  # chosen so
    for tested, wording in ((0, "tested no cell"), (3, "raised no signal in the 3 cells it could test so far")):
        look = dataclasses.replace(section.run, run_id="look" + str(tested), as_of=section.run.as_of.replace(hour=7),
                                   closing=False, tested=tested, signals=0)
        shown = dataclasses.replace(data, evaluators=(dataclasses.replace(section, look=look, look_signals=()),))
        html = panels(shown)["signals"]
        assert "signal-row" in html  # the closing decision's regression is still listed
        assert wording in html and "does not withdraw the closing decision above" in html
        assert f"none of the {tested} tested cells changed" not in html
