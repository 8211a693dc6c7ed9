"""The console's "Send a bot" in a real browser: headless Chromium (testkit/browser.py) against a real server on
loopback that hosts the Attendee bridge, with the Attendee fake (testkit/attendee_fake.py) on its own event loop
playing the service: the person pastes the meeting link, sees the bot wait and get in, and asks it to leave."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from delegate.config import Settings
from delegate.integrations.attend import serving
from testkit.attendee_fake import FakeAttendee, FakeBot
from testkit.browser import NO_BROWSER, available, headless_chromium
from testkit.live import ALICE, LiveServer, start_server

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the dev extra has it)")
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason=NO_BROWSER)

TOKEN = "console-bot-token"
MEETING = "console-bot"
MEETING_URL = "https://meet.google.com/abc-def-ghi"
WAIT_S = 30.0
T = TypeVar("T")


class FakeService:
    """The Attendee fake served on loopback from its own thread and event loop (the browser test is synchronous)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="attendee-fake", daemon=True)
        self._thread.start()
        self._stop = asyncio.Event()
        self._ready = threading.Event()
        self.fake: FakeAttendee
        self.url = ""
        self._serving = asyncio.run_coroutine_threadsafe(self._serve(), self.loop)
        assert self._ready.wait(10), "the Attendee fake did not start"

    async def _serve(self) -> None:
        self.fake = FakeAttendee()
        async with serving(self.fake.app(), "127.0.0.1", 0) as port:
            self.url = f"http://127.0.0.1:{port}"
            self._ready.set()
            await self._stop.wait()

    def run(self, step: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(step, self.loop).result(WAIT_S)  # type: ignore[arg-type]

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._serving.result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


@pytest.fixture
def attendee_service() -> Iterator[FakeService]:
    service = FakeService()
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def hosting(tmp_path: Path, attendee_service: FakeService, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    """A server with Attendee's keys (the fake's) in its environment, and its own address as the public URL."""
    fake = attendee_service.fake
    monkeypatch.setenv("ATTENDEE_URL", attendee_service.url)
    monkeypatch.setenv("ATTENDEE_API_KEY", fake.api_key)
    monkeypatch.setenv("ATTENDEE_WEBHOOK_SECRET", fake.webhook_secret)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings(db_path=tmp_path / "audit.sqlite", api_tokens=TOKEN, log_level="warning", engine="local",
                        voice=False, public_url=f"http://127.0.0.1:{port}")
    live = start_server(settings, port=port)
    try:
        yield live
    finally:
        if live.thread.is_alive():
            live.stop()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path / "chromium-profile") as driver:
        yield driver


def wait(driver: WebDriver, condition: Callable[[WebDriver], Any], what: str) -> Any:
    try:
        return WebDriverWait(
            driver, WAIT_S, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
        ).until(condition)
    except TimeoutException:
        raise AssertionError(f"the page never showed {what}") from None


def bot_line(state: str) -> Callable[[WebDriver], str | bool]:
    """The bot's status line once it stands at `state`: its text."""

    def found(d: WebDriver) -> str | bool:
        line = d.find_element(By.ID, "bot-state")
        return bool(line.is_displayed() and line.get_attribute("data-state") == state) and line.text

    return found


def test_send_a_bot_from_the_console_and_see_it_get_in(
    hosting: LiveServer, attendee_service: FakeService, browser: WebDriver
) -> None:
    driver = browser
    body = {"meeting_id": MEETING, "principal": ALICE, "attendees": ["Bob Jones"]}
    created = httpx.post(f"{hosting.url}/v1/meetings", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert created.status_code == 201, created.text

    driver.get(f"{hosting.url}/console/{MEETING}")
    token = wait(driver, lambda d: d.find_element(By.ID, "token-input").is_displayed() and d.find_element(By.ID, "token-input"), "the token field")
    token.send_keys(TOKEN + "\n")
    wait(driver, lambda d: d.find_element(By.ID, "m-send").is_displayed(), "the Send a bot control")
    assert not driver.find_element(By.ID, "bot-leave").is_displayed()

    # A link that is no meeting link is refused on the page; the pasted one goes to the server.
    link = driver.find_element(By.ID, "f-meeting-link")
    link.send_keys("not a link")
    driver.find_element(By.ID, "send-bot").click()
    assert wait(driver, lambda d: d.find_element(By.ID, "send-error").is_displayed(), "the link's error")
    link.clear()
    link.send_keys(MEETING_URL)
    Select(driver.find_element(By.ID, "f-via")).select_by_value("attendee")
    driver.find_element(By.ID, "send-bot").click()
    assert "requested" in wait(driver, bot_line("requested"), "the bot requested").lower()
    assert not driver.find_element(By.ID, "send-error").is_displayed()

    fake = attendee_service.fake
    bot: FakeBot = attendee_service.run(asyncio.wait_for(fake.created.get(), WAIT_S))
    assert bot.request["meeting_url"] == MEETING_URL
    assert attendee_service.run(bot.change_state("waiting_room", "put_in_waiting_room")) == 200
    assert "waiting to be admitted" in wait(driver, bot_line("waiting_room"), "the bot in the waiting room")
    assert attendee_service.run(bot.change_state("joined_recording", "joined_meeting")) == 200
    assert "in the meeting" in wait(driver, bot_line("in_meeting"), "the bot in the meeting")
    pill = driver.find_element(By.ID, "m-admission")
    assert pill.get_attribute("data-state") == "in_meeting" and pill.text == "In the meeting"

    driver.find_element(By.ID, "bot-leave").click()
    assert "left" in wait(driver, bot_line("ended"), "the bot gone")
    assert bot.left  # the service was asked to take it out of the call
