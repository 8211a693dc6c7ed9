"""The console's "start from sources" in a real browser: the brief form fills from the server's sources
folder with each item's provenance and why it is private, and the meeting it starts answers from it.

Headless Chromium against a real uvicorn server on loopback (as test_console_browser.py); skipped without
Chromium."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testkit.browser import NO_BROWSER, available, headless_chromium
from testkit.live import LiveServer
from tests.delegate.server.test_briefs import sources_folder
from tests.delegate.server.test_console_browser import bot_client, click, screenshot, text_of, visible, wait

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the dev extra has it)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason=NO_BROWSER)

TOKEN = "console-sources-token"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path / "chromium-profile") as driver:
        yield driver


def test_the_brief_starts_from_sources_with_provenance_and_privacy(
    make_server: Callable[..., LiveServer], browser: WebDriver, tmp_path: Path
) -> None:
    live = make_server(api_tokens=TOKEN, sources_dir=sources_folder(tmp_path))
    driver = browser
    driver.get(f"{live.url}/")
    wait(driver, visible(driver, "#token-input"), "the token field").send_keys(TOKEN + "\n")
    wait(driver, visible(driver, "#sources-box"), "the sources box")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, '#f-src-event option[value="review"]'), "the review event")
    driver.find_element(By.CSS_SELECTOR, '#f-src-event option[value="review"]').click()

    # Without the principal's address the server refuses, and the page says why.
    click(driver, "#src-draft", "the draft button")
    assert "principal" in text_of(driver, "#sources-error", "the refused draft")
    driver.find_element(By.ID, "f-src-principal").send_keys("ana@example.org")
    click(driver, "#src-draft", "the draft button")
    status = text_of(driver, "#sources-status", "the drafted brief")
    assert 'for "Launch review"' in status and "1 older items left out" in status

    assert driver.find_element(By.ID, "f-name").get_attribute("value") == "Ana Ruiz"
    assert driver.find_element(By.ID, "f-meeting-id").get_attribute("value") == "review"
    rows = driver.find_elements(By.CSS_SELECTOR, ".bg-row")
    by_origin = {r.find_element(By.CSS_SELECTOR, ".bg-provenance").text: r for r in rows}
    mail = by_origin["From gmail · m2@example.org · 2025-03-10"]
    assert "10 June" in (mail.find_element(By.CSS_SELECTOR, ".bg-information").get_attribute("value") or "")
    assert mail.find_element(By.CSS_SELECTOR, ".bg-shareable").is_selected()
    dentist = next(r for origin, r in by_origin.items() if "dentist" in origin)
    assert not dentist.find_element(By.CSS_SELECTOR, ".bg-shareable").is_selected()
    assert dentist.find_element(By.CSS_SELECTOR, ".badge.private").is_displayed()
    assert dentist.find_element(By.CSS_SELECTOR, ".bg-why-private").text == "Private: a private calendar event"
    assert not any("m1@example.org" in origin for origin in by_origin)  # corrected by m2
    names = [e.get_attribute("value") for e in driver.find_elements(By.CSS_SELECTOR, ".att-name")]
    assert sorted(names) == ["Ben Cho", "Cleo Diaz"]
    screenshot(driver, "brief-from-sources")

    # The reviewed draft starts the meeting, and the delegate answers from it with its provenance kept.
    driver.find_element(By.CSS_SELECTOR, "#f-engine option[value=local]").click()
    driver.find_element(By.CSS_SELECTOR, "input[name=approval][value=none]").find_element(By.XPATH, "..").click()
    driver.find_element(By.ID, "brief-submit").click()
    wait(driver, lambda d: d.execute_script("return location.pathname") == "/console/review", "the watch page")
    with bot_client(live, "review", TOKEN) as bot:
        bot.send({"type": "join"})
        bot.wait_for(lambda f: f.get("type") == "ack" and f.get("of") == "join")
        bot.say(0, "Ben", "Ana, when is the Lumen launch now?")
        said = bot.decision(0)["decision"]
        assert "10 June" in said["speak"] and "3 June" not in said["speak"]
        assert "Dentist" not in said["speak"]
        # The console names the records the reply was made of, by source and id.
        used = text_of(driver, "#row-0 .used", "the records the reply used")
        assert "gmail · m2@example.org" in used and "10 June" in used



def test_without_a_sources_folder_the_console_starts_from_the_example_workplace(
    make_server: Callable[..., LiveServer], browser: WebDriver
) -> None:
    live = make_server(api_tokens=TOKEN)
    driver = browser
    driver.get(f"{live.url}/")
    wait(driver, visible(driver, "#token-input"), "the token field").send_keys(TOKEN + "\n")
    wait(driver, visible(driver, "#sources-example"), "the note that this is the example workplace")
    assert "made-up company" in text_of(driver, "#sources-example", "the example note")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, '#f-src-event option[value="harbor-review"]'), "the example's meeting")
    driver.find_element(By.CSS_SELECTOR, '#f-src-event option[value="harbor-review"]').click()
    assert driver.find_element(By.ID, "f-src-principal").get_attribute("value") == "maya@kestrel.example"
    click(driver, "#src-draft", "the draft button")
    assert 'for "Harbor 2.4 release review"' in text_of(driver, "#sources-status", "the drafted brief")
    assert driver.find_element(By.ID, "f-name").get_attribute("value") == "Maya Okafor"
