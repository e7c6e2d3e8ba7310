"""`verdict ui` in a real browser: Debian's headless Chromium driven by Selenium through Debian's
chromium-driver (`make browser` installs both; nothing is downloaded at run time), against the real
server started by the `verdict ui` command on a free port over a copy of the test lake.

A newcomer's path: the overview, a signal, one of its examples, its trace; then the review queue,
five items labelled by keyboard alone (p/f per dimension, the critique, Enter, n for the next item),
the agreement growing after each. Any console error fails the test. Screenshots at 1280 and 390 px
go to test-artifacts/ui/.
"""

from __future__ import annotations

import base64
import shutil
import struct
from pathlib import Path

import pytest

from tests.ui.conftest import serving, signal_with_items, state_rows
from verdict.tenancy import TenantId
from verdict_daemon.review import get_item, list_items, record_labels
from verdict_daemon.store.state import StateStore
from verdict_ui.labelling import MIN_AGREEMENT_ITEMS

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
DESKTOP, PHONE = (1440, 900), (390, 844)
LABELLED = 5


def chrome(size: tuple[int, int], phone: bool = False):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.fail("the browser test needs Debian's chromium and chromium-driver: `make browser`")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                f"--window-size={size[0]},{size[1]}"):
        options.add_argument(arg)
    if phone:  # a headless window cannot be narrower than ~500 px; the phone is emulated at 390 px
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": {"width": size[0], "height": size[1],
                                                                              "pixelRatio": 1}})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


# Every visible form control has a label, and nothing jumps the keyboard's tab order.
A11Y = """return [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
  .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.tagName === 'BUTTON'
    && e.textContent.trim())).map((e) => e.outerHTML)
  .concat([...document.querySelectorAll('[tabindex]')].filter((e) => e.tabIndex > 0).map((e) => e.outerHTML));"""


class Console:
    """Every console message of the session; a SEVERE one (an error, a failed load) fails the test."""

    def __init__(self, driver) -> None:
        self.driver = driver
        self.errors: list[str] = []

    def check(self, where: str) -> None:
        self.errors += [f"{where}: {e['message']}" for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not self.errors, self.errors


def shot(driver, name: str, width: int, down_to: str | None = None) -> None:
    """The viewport as a PNG; with `down_to` (a CSS selector) the page from its top to that element's end."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if down_to is None:
        png = driver.get_screenshot_as_png()
    else:
        bottom = driver.execute_script("return Math.ceil(document.querySelector(arguments[0]).getBoundingClientRect()"
                                       ".bottom + window.scrollY + 16);", down_to)
        clip = {"x": 0, "y": 0, "width": width, "height": bottom, "scale": 1}
        png = base64.b64decode(driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True, "clip": clip})["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] == width
    (ARTIFACTS / name).write_bytes(png)


def agreement_total(driver, base: str) -> int:
    """Sum of labelled items over every agreement row of the review page (0 without labels)."""
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/review")
    return sum(int(c.text) for c in driver.find_elements(By.CSS_SELECTOR, "td.agreement-n"))


def test_from_a_signal_to_its_trace_then_label_five_items_by_keyboard(server):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome(DESKTOP)
    console = Console(driver)
    wait = WebDriverWait(driver, 30)
    try:
        driver.get(server + "/")
        assert driver.find_element(By.TAG_NAME, "h1").text.startswith("Overview")
        assert driver.execute_script("return document.documentElement.clientWidth") == DESKTOP[0]
        shot(driver, "overview-desktop.png", DESKTOP[0])
        console.check("overview")

        driver.find_element(By.CSS_SELECTOR, "a.signal-link").click()
        wait.until(ec.title_contains("Signal"))
        assert driver.find_elements(By.CSS_SELECTOR, "svg.rate-chart")
        console.check("signal")
        driver.find_element(By.CSS_SELECTOR, "a.example-link").click()
        wait.until(ec.title_contains("Trace"))
        assert driver.find_elements(By.CSS_SELECTOR, ".msg.role-assistant pre")
        assert driver.find_elements(By.CSS_SELECTOR, "table.verdicts td")
        shot(driver, "trace-desktop.png", DESKTOP[0])
        console.check("trace")

        driver.get(server + "/traces")
        assert driver.execute_script(A11Y) == []
        totals = [agreement_total(driver, server)]
        assert totals == [0]
        driver.find_element(By.ID, "next-item").click()
        name = wait.until(ec.presence_of_element_located((By.ID, "reviewer")))
        name.send_keys("alice\n")
        for i in range(LABELLED):
            wait.until(ec.presence_of_element_located((By.ID, "label-form")))
            assert driver.find_elements(By.ID, "blind")  # the judge's view is hidden until labelled
            assert driver.execute_script(A11Y) == []
            url = driver.current_url
            keys = ActionChains(driver)
            for j, _ in enumerate(driver.find_elements(By.CSS_SELECTOR, "fieldset.dimension")):
                keys.send_keys("f" if (i + j) % 3 == 0 else "p")
            keys.send_keys(f"labelled by keyboard {i}\n").perform()
            wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.judge-view")))
            assert not driver.find_elements(By.ID, "blind")
            console.check(f"item {i}")
            if i == 0:
                shot(driver, "review-item-desktop.png", DESKTOP[0])
            totals.append(agreement_total(driver, server))
            driver.get(url)
            ActionChains(driver).send_keys("n").perform()  # the next item in priority order
            wait.until(lambda d: d.current_url != url)  # noqa: B023  (waited for here, in this iteration)
        assert all(b > a for a, b in zip(totals, totals[1:], strict=False)), totals  # agreement grew each time
        console.check("review")
    finally:
        driver.quit()


def test_pages_fit_a_phone(server):
    from selenium.webdriver.common.by import By

    driver = chrome(PHONE, phone=True)
    console = Console(driver)
    try:
        for path, name in (("/", "overview"), ("/traces", "traces"), ("/review", "review")):
            driver.get(server + path)
            assert driver.execute_script("return document.documentElement.clientWidth") == PHONE[0]
            # no sideways page scroll: wide tables scroll inside their own box
            assert driver.execute_script("return document.documentElement.scrollWidth") <= PHONE[0], path
            shot(driver, f"{name}-phone.png", PHONE[0])
            console.check(path)
        driver.get(server + "/traces")
        driver.find_element(By.CSS_SELECTOR, "a.trace-link").click()
        assert driver.execute_script("return document.documentElement.scrollWidth") <= PHONE[0]
        shot(driver, "trace-phone.png", PHONE[0])
        console.check("trace")
    finally:
        driver.quit()


def label_some(data_dir: Path, tenant: str) -> None:
    """Enough labels on `tenant`'s items that agreement shows all its figures."""
    store, t = StateStore(data_dir), TenantId(tenant)
    for i, item in enumerate(list_items(store, t, status="pending", limit=MIN_AGREEMENT_ITEMS + 2).items):
        dims = [j.dimension for j in get_item(store, t, item.item_id).judgments if j.verdict in ("PASS", "FAIL")]
        record_labels(store, t, item.item_id, {d: "FAIL" if (i + k) % 4 == 0 else "PASS" for k, d in enumerate(dims)},
                      critique=f"label {i}", reviewer="alice" if i % 2 else "bob")


@pytest.fixture
def labelled_server(data_dir):
    """`verdict ui` for acme over a copy of the lake with labels."""
    label_some(data_dir, "acme")
    with serving(data_dir) as url:
        yield url


@pytest.fixture
def umbrella_server(data_dir):
    """`verdict ui` for umbrella (whose signals have examples in the review queue) over a copy with labels."""
    label_some(data_dir, "umbrella")
    with serving(data_dir, "umbrella") as url:
        yield url


# The list tables (class "cards") that are wider than their box: each must fit, at any width.
OVERFLOWING = """return [...document.querySelectorAll('.table-wrap')].filter((w) => w.querySelector('table.cards'))
  .filter((w) => w.scrollWidth > w.clientWidth).map((w) => w.getAttribute('aria-label'));"""
PAGE_WIDTH = "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];"


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_lists_fit_the_width_with_the_answer_shown(labelled_server, size):
    from selenium.webdriver.common.by import By

    driver = chrome(size, phone=size == PHONE)
    console = Console(driver)
    kind = "desktop" if size == DESKTOP else "phone"
    try:
        for path, name, tables in (("/traces", "traces", 1), ("/signals", "signals", 1), ("/review", "review", 1),
                                   ("/traffic", "traffic", 2), ("/", "overview", 1)):
            driver.get(labelled_server + path)
            assert driver.execute_script("return document.querySelectorAll('table.cards').length") >= tables, path
            scroll, client = driver.execute_script(PAGE_WIDTH)
            assert client == size[0] and scroll <= client, (path, scroll, client)
            assert driver.execute_script(OVERFLOWING) == [], path
            shot(driver, f"{name}-{kind}.png", size[0])
            console.check(path)
        driver.get(labelled_server + "/traces")
        header = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "table.traces th")]
        assert any(h.startswith("Answer") for h in header) or size == PHONE  # a phone's header is visually hidden
        answer = driver.find_elements(By.CSS_SELECTOR, "table.traces td[data-label='Answer'] summary")[0]
        clipped = answer.size["height"]
        answer.send_keys("\n")  # the whole text on demand, by keyboard
        assert driver.find_elements(By.CSS_SELECTOR, "table.traces td[data-label='Answer'] details[open]")
        assert answer.size["height"] >= clipped
        assert driver.execute_script(OVERFLOWING) == [] and driver.execute_script(PAGE_WIDTH)[0] <= size[0]
        assert driver.execute_script(A11Y) == []
        console.check("answer opened")
    finally:
        driver.quit()


# axe-core (the version tests/ui/axe/package-lock.json pins; `make axe` installs it) on the page as shown.
AXE = Path(__file__).resolve().parents[2] / ".axe" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")
AXE_RUN = """const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ['violations']}).then(
  (r) => done(r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                                         targets: v.nodes.map((n) => n.target.join(' '))}))),
  (e) => done([{id: 'axe-error', impact: 'critical', help: String(e), targets: []}]));"""


def axe_violations(driver, where: str) -> list[str]:
    """The page's serious and critical axe violations, one readable line each (rule, impact, help, targets)."""
    if not AXE.exists():
        pytest.fail(f"the accessibility check needs axe-core at {AXE}: `make axe`")
    driver.set_script_timeout(120)
    driver.execute_script(AXE.read_text(encoding="utf-8"))  # run by the driver: outside the page's CSP
    found = driver.execute_async_script(AXE_RUN)
    return [f"{where}: {v['id']} ({v['impact']}) {v['help']} — {', '.join(v['targets'][:5])}"
            + (f" and {len(v['targets']) - 5} more" if len(v["targets"]) > 5 else "")
            for v in found if v["impact"] in BLOCKING]


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_page_passes_axe(umbrella_server, data_dir, size):
    """Every page the browser tests open, at both widths, with no serious or critical axe violation: the
    overview, traces, a trace, signals, a signal, traffic, the review queue and a signal's queue, and a review
    item as a first-time reviewer sees it (the name form), while labelling (blind) and once labelled."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome(size, phone=size == PHONE)
    console = Console(driver)
    kind = "desktop" if size == DESKTOP else "phone"
    signal, items = signal_with_items(data_dir, "umbrella", queued=True)
    item = sorted(items)[0]  # blind for a new reviewer, whoever labelled it before
    queue = f"/review?status=all&signal={signal}"
    problems: list[str] = []

    def check(path: str, name: str | None = None, down_to: str | None = None) -> None:
        driver.get(umbrella_server + path)
        problems.extend(axe_violations(driver, path))
        if name:
            shot(driver, f"{name}-{kind}.png", size[0], down_to)
        console.check(path)

    try:
        for path, name, down_to in (("/", None, None), ("/traces", None, None), ("/signals", None, None),
                                    (f"/signals/{signal}", "signal", "figure.chart-box"), ("/traffic", None, None),
                                    ("/review", None, None), (queue, "signal-queue", "table.queue"),
                                    (f"/review/{item}?signal={signal}", None, None)):
            check(path, name, down_to)
        driver.get(umbrella_server + "/traces")
        check((driver.find_element(By.CSS_SELECTOR, "a.trace-link").get_attribute("href") or "").removeprefix(
            umbrella_server), "trace")
        driver.get(f"{umbrella_server}/review/{item}?signal={signal}")
        driver.find_element(By.ID, "reviewer").send_keys("carol\n")  # the name form, then the label form
        check(f"/review/{item}?signal={signal}", "review-item-blind")
        assert driver.find_elements(By.ID, "label-form")
        driver.find_element(By.ID, "critique").send_keys("checked by axe")
        for fieldset in driver.find_elements(By.CSS_SELECTOR, "fieldset.dimension"):
            fieldset.find_element(By.CSS_SELECTOR, "input[value=PASS]").click()
        driver.find_element(By.CSS_SELECTOR, "#label-form button[type=submit]").click()
        WebDriverWait(driver, 30).until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.judge-view")))
        check(f"/review/{item}?signal={signal}")  # labelled: the judge's view and the agreement
        check("/login")
        # the check can fail: a button without a name is a critical violation axe reports
        driver.execute_script("document.querySelector('main').append(document.createElement('button'))")
        assert any(" button-name (critical) " in p for p in axe_violations(driver, "nameless"))
    finally:
        driver.quit()
    assert not problems, "serious/critical axe violations:\n" + "\n".join(problems)


def tab_to(driver, css: str, limit: int = 200):
    """Press Tab until the focused element matches `css` (or already does); the element."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    for _ in range(limit):
        if driver.execute_script("return document.activeElement.matches(arguments[0])", css):
            return driver.switch_to.active_element
        ActionChains(driver).send_keys(Keys.TAB).perform()
    pytest.fail(f"{limit} Tabs did not reach {css} on {driver.current_url}")


def test_keyboard_alone_filters_opens_an_answer_and_labels(umbrella_server, data_dir):
    """With Tab, Enter, Space and the arrow keys only (no mouse, none of the labelling page's shortcut keys): a
    filter of the trace table, an answer opened in full, the next review item, the name form and the label
    form's choices, critique and save button."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome(DESKTOP)
    console = Console(driver)
    wait = WebDriverWait(driver, 30)
    try:
        driver.get(umbrella_server + "/traces")
        verdict = tab_to(driver, "select#f-verdict")
        verdict.send_keys(Keys.DOWN)  # "any" → the first verdict
        chosen = verdict.get_attribute("value")
        assert chosen
        tab_to(driver, "form.filters button[type=submit]").send_keys(Keys.ENTER)
        wait.until(ec.url_contains(f"verdict={chosen}"))
        tab_to(driver, "td[data-label='Answer'] summary").send_keys(Keys.ENTER)
        assert driver.find_elements(By.CSS_SELECTOR, "td[data-label='Answer'] details[open]")
        console.check("traces")

        driver.get(umbrella_server + "/review")
        tab_to(driver, "a#next-item").send_keys(Keys.ENTER)
        tab_to(driver, "input#reviewer", limit=400).send_keys("dave", Keys.ENTER)
        wait.until(ec.presence_of_element_located((By.ID, "label-form")))
        item = driver.current_url.rsplit("/", 1)[1].split("?", 1)[0]
        sets = driver.find_elements(By.CSS_SELECTOR, "fieldset.dimension")
        for i in range(len(sets)):  # a radio group is one Tab stop: Space checks its first choice (PASS) ...
            tab_to(driver, f"fieldset.dimension[data-index='{i}'] input").send_keys(Keys.SPACE)
        tab_to(driver, f"fieldset.dimension[data-index='{len(sets) - 1}'] input").send_keys(Keys.RIGHT)  # ... → FAIL
        tab_to(driver, "input#critique").send_keys("one wrong by keyboard")
        tab_to(driver, "#label-form button[type=submit]").send_keys(Keys.ENTER)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.judge-view")))
        console.check("labelled")
    finally:
        driver.quit()
    labels = state_rows(data_dir, "SELECT dimension, label, critique FROM review_labels WHERE item_id = $i AND "
                                  "reviewer = 'dave' ORDER BY revision", i=item)
    assert len(labels) == len(sets) >= 1 and [r[1] for r in labels].count("FAIL") == 1, labels
    assert {r[2] for r in labels} == {"one wrong by keyboard"}
