"""`verdict ui` in a real browser: Debian's headless Chromium driven by Selenium through Debian's
chromium-driver (`make browser` installs both; nothing is downloaded at run time), against the real
server started by the `verdict ui` command on a free port over a copy of the test lake.

A newcomer's path: the overview, a signal, one of its examples, its trace; then the review queue,
five items labelled by keyboard alone (p/f per dimension, the critique, Enter, n for the next item),
the agreement growing after each. Any console error fails the test. Screenshots at 1280 and 390 px
go to test-artifacts/ui/.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from tests.ui.conftest import serving
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


def shot(driver, name: str, width: int) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    png = driver.get_screenshot_as_png()
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


@pytest.fixture
def labelled_server(data_dir):
    """`verdict ui` over a copy of the lake with enough labels that agreement shows all its figures."""
    store, acme = StateStore(data_dir), TenantId("acme")
    for i, item in enumerate(list_items(store, acme, status="pending", limit=MIN_AGREEMENT_ITEMS + 2).items):
        dims = [j.dimension for j in get_item(store, acme, item.item_id).judgments if j.verdict in ("PASS", "FAIL")]
        record_labels(store, acme, item.item_id, {d: "FAIL" if (i + k) % 4 == 0 else "PASS" for k, d in enumerate(dims)},
                      critique=f"label {i}", reviewer="alice" if i % 2 else "bob")
    with serving(data_dir) as url:
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
