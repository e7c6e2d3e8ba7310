"""The span tree and the conversation pages in a real browser (Debian's headless Chromium through Selenium, as
tests/ui/test_browser.py), against the real `verdict ui` server: a recorded Vercel AI 7 agent run (landed through
the real collector, tests/ui/test_trace_tree.py) and a real multi-turn conversation (tests/ui/test_conversations.py).

At 1,440 × 900 and at 390 × 844 (a phone, emulated): the page fits the width (no sideways scroll), every control has
a label, every link and disclosure of the tree and of the turns is reached with Tab alone in document order, and
Enter on a tool call opens its arguments and result. Any console error fails the test. Screenshots go to
test-artifacts/ui/.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import start_server
from tests.ui.test_browser import A11Y, DESKTOP, PAGE_WIDTH, PHONE, Console, chrome, shot
from tests.ui.test_conversations import chat_dir  # noqa: F401  (a fixture)
from tests.ui.test_trace_tree import agents  # noqa: F401  (a fixture)

pytestmark = pytest.mark.browser

# Every element the keyboard should reach in the part of the page under test, in document order.
TARGETS = """return [...document.querySelectorAll(arguments[0])].map((e, i) => { e.dataset.probe = String(i); return i; }).length;"""
FOCUSED = "const e = document.activeElement; return e && e.dataset ? (e.dataset.probe ?? null) : null;"


@contextlib.contextmanager
def browsing(data_dir: Path, tenant: str, size: tuple[int, int]) -> Iterator[tuple[Any, Console, str]]:
    """The real server for `tenant` and a browser of `size` (a phone emulated at PHONE): driver, console, URL."""
    process, url = start_server(data_dir, "--tenant", tenant)
    driver = chrome(size, phone=size == PHONE)
    try:
        yield driver, Console(driver), url
    finally:
        driver.quit()
        process.terminate()
        process.wait(timeout=30)


def tab_through(driver, selector: str) -> list[str]:
    """Press Tab from the top of the page until past the last target; the targets reached, in order."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    total = driver.execute_script(TARGETS, selector)
    assert total > 0, selector
    driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0);")
    reached: list[str] = []
    for _ in range(400):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        probe = driver.execute_script(FOCUSED)
        if probe is not None and probe not in reached:
            reached.append(probe)
        if len(reached) == total:
            break
    return reached


def fits(driver, width: int, where: str) -> None:
    scroll, client = driver.execute_script(PAGE_WIDTH)
    assert client == width and scroll <= client, (where, scroll, client)


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_span_tree_fits_and_is_keyboard_reachable(agents, size):  # noqa: F811  (the fixture imported above)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    kind = "desktop" if size == DESKTOP else "phone"
    with browsing(agents, "vercel-ai-7-tool", size) as (driver, console, url):
        driver.get(url + "/traces")
        fits(driver, size[0], "traces")
        driver.find_element(By.CSS_SELECTOR, "a.trace-link").click()
        assert driver.find_elements(By.CSS_SELECTOR, "ol.span-tree ol.span-tree ol.span-tree .k-tool")  # depth 2
        fits(driver, size[0], "trace")
        tracks = driver.execute_script("return [...document.querySelectorAll('.span-track')].map((t) => {"
                                       "const r = t.getBoundingClientRect(); return [Math.round(r.left), Math.round(r.width)]; });")
        assert len(tracks) == 6 and len(set(map(tuple, tracks))) == 1, tracks  # one time axis at every depth
        assert driver.execute_script(A11Y) == []
        selector = "#timeline a, #timeline summary"
        reached = tab_through(driver, selector)
        assert reached == [str(i) for i in range(len(reached))] and len(reached) == driver.execute_script(
            TARGETS, selector), reached  # every one, in document order
        tool = driver.find_element(By.CSS_SELECTOR, "details.tool-call summary")
        tool.send_keys(Keys.ENTER)
        opened = driver.find_element(By.CSS_SELECTOR, "details.tool-call[open]")
        assert "card_last4" in opened.text and "two charges of 12.00 EUR" in opened.text
        fits(driver, size[0], "tool call opened")
        driver.execute_script("document.getElementById('timeline').scrollIntoView()")
        shot(driver, f"trace-tree-{kind}.png", size[0])
        link = driver.find_element(By.CSS_SELECTOR, "a.call-link")
        fragment = link.get_attribute("href").split("#")[1]
        link.send_keys(Keys.ENTER)  # a model call leads to its messages
        assert driver.current_url.endswith("#" + fragment)
        target = driver.execute_script("return document.querySelector(location.hash)")
        assert target is not None and target.tag_name == "article"
        assert "tool call lookup_charge (call_1), arguments:" in target.text  # formatted, not raw JSON
        console.check("trace tree")


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_conversation_pages_fit_and_are_keyboard_reachable(chat_dir, size):  # noqa: F811
    from selenium.webdriver.common.by import By

    kind = "desktop" if size == DESKTOP else "phone"
    with browsing(chat_dir, "acme", size) as (driver, console, url):
        driver.get(url + "/conversations")
        fits(driver, size[0], "conversations")
        assert driver.execute_script(A11Y) == []
        shot(driver, f"conversations-{kind}.png", size[0])
        driver.find_element(By.CSS_SELECTOR, "a.conversation-link[href^='/conversations/c1']").click()
        assert [a.get_attribute("id") for a in driver.find_elements(By.CSS_SELECTOR, "article.turn")] == [
            "turn-1", "turn-2", "turn-3"]
        fits(driver, size[0], "conversation")
        assert driver.execute_script(A11Y) == []
        selector = "#turns a, #turns summary"
        reached = tab_through(driver, selector)
        assert reached == [str(i) for i in range(len(reached))] and len(reached) == driver.execute_script(
            TARGETS, selector), reached
        verdicts = driver.find_element(By.CSS_SELECTOR, "#turn-1 .turn-verdicts summary")
        verdicts.click()
        assert driver.find_elements(By.CSS_SELECTOR, "#turn-1 .turn-verdicts details[open] table.verdicts")
        fits(driver, size[0], "verdicts opened")
        shot(driver, f"conversation-{kind}.png", size[0])
        driver.find_element(By.CSS_SELECTOR, "#turn-2 a.trace-link").click()
        back = driver.find_element(By.CSS_SELECTOR, "dl.related a.conversation-link")
        assert "/conversations/c1?trace=" in back.get_attribute("href")
        fits(driver, size[0], "turn's trace")
        console.check("conversation")
