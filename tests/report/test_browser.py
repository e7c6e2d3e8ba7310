"""The report in a real browser: headless Chromium (Debian package; `make test` installs it) loads the
file, and the test reads the DOM it built and the layout it computed, at desktop and phone widths.

Layout is measured by a wrapper page that shows the report (unchanged, CSP included) in an iframe of
the wanted viewport and reads its layout: page width against the viewport, rendered chart sizes,
heatmap colours, tables that scroll inside their own box. Screenshots are saved under test-artifacts/report/ for a human to look at.
"""

from __future__ import annotations

import html
import json
import shutil
import struct
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.report.test_render import Elements
from verdict_daemon.report import write_report
from verdict_daemon.report.panels import PENDING_SHOWN

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "report"
AT = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
DESKTOP, PHONE = (1280, 900), (390, 844)

# A wrapper page shows the report in an iframe of the wanted viewport (headless windows have a minimum
# width above a phone's) and measures what the browser laid out inside it, into the wrapper's DOM.
PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="view" width="{width}" height="{height}" style="border:0" srcdoc="{report}"></iframe>
<script>
document.getElementById('view').addEventListener('load', () => {{
  const doc = document.getElementById('view').contentDocument;
  if ({open_review}) doc.querySelectorAll('details.review').forEach((d) => {{ d.open = true; }});
  const box = (el) => el.getBoundingClientRect();
  const out = {{
    viewport: doc.documentElement.clientWidth, page: doc.documentElement.scrollWidth,
    charts: [...doc.querySelectorAll('svg.rate-chart')].map((s) => Math.round(box(s).width)),
    cells: [...doc.querySelectorAll('td.heat-cell')].map((c) => getComputedStyle(c).backgroundColor),
    wraps: [...doc.querySelectorAll('.table-wrap')].map((w) => [w.scrollWidth > w.clientWidth,
                                                               Math.round(box(w).right)]),
    dom: doc.documentElement.outerHTML,
  }};
  const pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify(out);  // text, so the serialised DOM escapes the report's markup
  document.body.appendChild(pre);
}});
</script></body></html>"""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("headless Chromium is needed for the report's browser test: `make browser` (apt package chromium)")
    return path


def browse(page: Path, profile: Path, size: tuple[int, int], *mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}", *mode, page.as_uri()],
        capture_output=True, text=True, timeout=90)


def layout(page: Path, profile: Path, size: tuple[int, int], open_review: bool = False) -> dict:
    probe = page.with_name(f"probe-{size[0]}.html")
    probe.write_text(PROBE.format(width=size[0], height=size[1], report=html.escape(page.read_text(), quote=True),
                                  open_review=str(open_review).lower()))
    done = browse(probe, profile, DESKTOP, "--virtual-time-budget=10000", "--dump-dom")
    assert done.returncode == 0 and '<pre id="layout">' in done.stdout, "the layout probe did not run"
    return json.loads(html.unescape(done.stdout.rsplit('<pre id="layout">', 1)[1].split("</pre>", 1)[0]))


def screenshot(page: Path, profile: Path, size: tuple[int, int], name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / name
    target.unlink(missing_ok=True)
    done = browse(page, profile, size, f"--screenshot={target}")
    assert done.returncode == 0 and target.exists(), done.stderr[-2000:]
    header = target.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24])[0] == size[0]  # IHDR width
    return target


@pytest.fixture(scope="module")
def pages(lake, probe_runs, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("browser")
    return {"acme": write_report(lake.data_dir, "acme", root / "acme.html", probes=probe_runs[:2], generated_at=AT),
            "globex": write_report(lake.data_dir, "globex", root / "globex.html", generated_at=AT)}


@pytest.fixture(scope="module")
def acme_desktop(pages, tmp_path_factory) -> dict:
    return layout(pages["acme"], tmp_path_factory.mktemp("profile"), DESKTOP)


def test_chromium_builds_the_report_dom(acme_desktop):
    elements = Elements(acme_desktop["dom"])
    headings = [t for t, _ in elements.tags if t in ("h1", "h2")]
    assert headings.count("h1") == 1 and headings.count("h2") == 7
    text = " ".join(elements.text)
    for title in ("Drift signals", "Latest pass rate by cluster and dimension", "Pass rate over time", "Coverage",
                  "Judge health", "Human review queue", "Judge cost and tokens"):
        assert title in text
    assert len(elements.all("tr", "signal-row")) == 2 and "▼ regression" in text
    assert len(elements.all("svg", "rate-chart")) == 20 and len(elements.all("polygon", "band")) == 20
    assert len(elements.all("rect")) >= 20 * 2  # the baseline and current windows of every chart
    assert len(elements.all("td", "heat-cell")) == 20  # 4 clusters x (4 rubric + 1 graph dimensions)
    assert len(elements.all("details", "example")) - len(elements.all("details", "review")) == 10  # 5 per signal
    assert len(elements.all("table", "panel")) == 2  # probe runs and the review queue counts
    assert "failing: sycophancy" in text and "Routed because: unclear" in text
    # the review queue's newest pending items (more than shown, so the page says so), each expandable
    assert len(elements.all("li", "review-item")) == len(elements.all("details", "review")) == PENDING_SHOWN
    assert f"Showing the {PENDING_SHOWN} most recently queued of" in text and "No item labelled yet" in text
    assert not elements.all("script")  # the conversation's <script> stayed text in the browser too


def _fits(measured: dict, size: tuple[int, int]) -> None:
    assert measured["viewport"] == size[0]
    assert measured["page"] <= size[0]  # no sideways page scroll: wide tables scroll inside their own box
    assert len(measured["charts"]) == 20 and min(measured["charts"]) >= 200  # drawn, and legible
    assert len(set(measured["cells"])) >= 2 and "rgba(0, 0, 0, 0)" not in measured["cells"]  # coloured cells
    assert all(right <= size[0] for _, right in measured["wraps"])


def test_layout_fits_a_desktop(acme_desktop):
    _fits(acme_desktop, DESKTOP)
    assert not any(scrolls for scrolls, _ in acme_desktop["wraps"])  # at 1280 px every table fits as it is


def test_layout_fits_a_phone(pages, tmp_path):
    measured = layout(pages["acme"], tmp_path, PHONE)
    _fits(measured, PHONE)
    assert any(scrolls for scrolls, _ in measured["wraps"])  # e.g. the signals table scrolls horizontally


def test_review_items_opened_on_a_phone_stay_within_the_page(pages, tmp_path):
    """Every review item expanded (conversation, rationale, the label command): still no sideways page scroll."""
    measured = layout(pages["acme"], tmp_path, PHONE, open_review=True)
    assert measured["page"] <= PHONE[0] and Elements(measured["dom"]).all("details", "review")
    assert len([a for a in Elements(measured["dom"]).all("details", "review") if "open" in a]) == PENDING_SHOWN


def test_an_empty_tenant_shows_its_empty_states(pages, tmp_path):
    measured = layout(pages["globex"], tmp_path, PHONE)
    elements = Elements(measured["dom"])
    text = " ".join(elements.text)
    assert len(elements.all("p", "empty")) == 8 and "No drift run yet" in text
    assert "Nothing has been judged for this tenant yet" in text and not elements.all("svg")
    assert measured["page"] <= PHONE[0]


def test_screenshots(pages, tmp_path):
    """Saved for a human (and as CI artifacts): test-artifacts/report/<tenant>-<desktop|phone>.png."""
    for tenant, page in pages.items():
        for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
            shot = screenshot(page, tmp_path, size, f"{tenant}-{label}.png")
            assert shot.stat().st_size > 15_000  # a rendered page; a blank 1280x900 one is about 5 kB
