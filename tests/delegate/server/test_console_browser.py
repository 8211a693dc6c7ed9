"""The web console in a real browser, used as a person would: sign in, brief a meeting, watch it, approve,
edit and reject what the delegate would say, read the summary and download the audit log.

Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by Selenium, against a real uvicorn
server on loopback with a bearer token; the meeting itself comes from a scripted bot client on the
WebSocket. Skipped, with the reason, where no Chromium is installed. Screenshots of the three screens
go to reports/console-screenshots/ (not committed).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from testkit.browser import NO_BROWSER, available, headless_chromium
from testkit.live import LiveServer, start_server

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the dev extra has it)")
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason=NO_BROWSER)

SCREENSHOTS = Path(__file__).resolve().parents[3] / "reports" / "console-screenshots"
TOKEN = "console-test-token"
MEETING = "console-e2e"
WAIT_S = 30.0
PRIVATE = "She is interviewing at another company on Thursday"
EDIT_LEAKING = "I am interviewing at another company on Thursday."
EDIT_OK = "Let me check my calendar and come back to you after the meeting."


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with headless_chromium(tmp_path / "chromium-profile", downloads) as driver:
        driver.downloads = downloads  # type: ignore[attr-defined]
        yield driver


class Bot:
    """The meeting bot's client: a WebSocket that sends utterances and keeps every frame it receives."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for message in self.ws:
            with self._seen:
                self.frames.append(json.loads(message))
                self._seen.notify_all()

    def send(self, frame: dict[str, Any]) -> None:
        self.ws.send(json.dumps(frame))

    def wait_for(self, what: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S) -> dict[str, Any]:
        with self._seen:
            self._seen.wait_for(lambda: any(what(f) for f in self.frames), timeout)
            found = next((f for f in self.frames if what(f)), None)
        assert found is not None, f"the bot never received it; it got {self.frames}"
        return found

    def say(self, uid: int, speaker: str, text: str) -> None:
        self.send({"type": "utterance", "id": uid, "speaker": speaker, "text": text})
        self.wait_for(lambda f: f.get("type") == "ack" and f.get("utterance_id") == uid)

    def decision(self, uid: int, timeout: float = WAIT_S) -> dict[str, Any]:
        return self.wait_for(
            lambda f: f.get("type") == "decision" and f["decision"]["utterance_id"] == uid, timeout
        )

    def close(self) -> None:
        self.ws.close()
        self._reader.join(timeout=10)


@contextlib.contextmanager
def bot_client(live: LiveServer, meeting: str = MEETING, token: str | None = TOKEN) -> Iterator[Bot]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    with connect(live.ws_url(meeting), additional_headers=headers, max_size=None) as ws:
        bot = Bot(ws)
        try:
            yield bot
        finally:
            bot.close()


def wait(driver: WebDriver, condition: Callable[[WebDriver], Any], what: str) -> Any:
    """Until `condition` holds; the page redraws a row on every event, so a stale element is tried again."""
    try:
        return WebDriverWait(
            driver, WAIT_S, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
        ).until(condition)
    except TimeoutException:
        screenshot(driver, f"failed-{what.replace(' ', '-')}")
        raise AssertionError(f"the page never showed {what}") from None


def visible(driver: WebDriver, css: str) -> Callable[[WebDriver], WebElement | bool]:
    def found(d: WebDriver) -> WebElement | bool:
        elements = [e for e in d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
        return elements[0] if elements else False

    return found


def text_of(driver: WebDriver, css: str, what: str) -> str:
    """The text of the first visible element `css` once it has some (read in one go, never stale)."""

    def found(d: WebDriver) -> str | bool:
        texts = [e.text for e in d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
        return next((text for text in texts if text), False)

    return wait(driver, found, what)


def click(driver: WebDriver, css: str, what: str) -> None:
    def clicked(d: WebDriver) -> bool:
        for e in d.find_elements(By.CSS_SELECTOR, css):
            if e.is_displayed() and e.is_enabled():
                e.click()
                return True
        return False

    wait(driver, clicked, what)


def row_status(driver: WebDriver, uid: int, status: str) -> str:
    """Waits for utterance `uid`'s row to stand at `status`; returns the row's text."""
    return text_of(driver, f'#row-{uid}[data-status="{status}"]', f"utterance {uid} {status}")


def screenshot(driver: WebDriver, name: str) -> None:
    """The whole page, not just the window: the window is stretched to the page's height for the shot."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    width, height = driver.get_window_size()["width"], driver.get_window_size()["height"]
    full = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, max(height, full + 140))
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    driver.set_window_size(width, height)


def type_into(field: WebElement, text: str) -> None:
    field.clear()
    field.send_keys(text)


def fill_brief(driver: WebDriver) -> None:
    """Everything but the principal's name, which the person forgets at first."""
    driver.find_element(By.ID, "f-aliases").send_keys("Alice")
    driver.find_element(By.ID, "f-intents").send_keys("Know when the migration lands")
    first = driver.find_element(By.CSS_SELECTOR, ".bg-row")
    first.find_element(By.CSS_SELECTOR, ".bg-context").send_keys("if asked about the database migration")
    first.find_element(By.CSS_SELECTOR, ".bg-information").send_keys("The migration finishes on Friday")
    driver.find_element(By.ID, "add-background").click()
    second = driver.find_elements(By.CSS_SELECTOR, ".bg-row")[1]
    second.find_element(By.CSS_SELECTOR, ".bg-context").send_keys("if asked about the budget")
    second.find_element(By.CSS_SELECTOR, ".bg-information").send_keys("The budget review moved to next quarter")
    driver.find_element(By.ID, "add-background").click()
    private = driver.find_elements(By.CSS_SELECTOR, ".bg-row")[2]
    private.find_element(By.CSS_SELECTOR, ".bg-context").send_keys("if asked about her availability")
    private.find_element(By.CSS_SELECTOR, ".bg-information").send_keys(PRIVATE)
    badge = private.find_element(By.CSS_SELECTOR, ".badge.private")
    assert private.find_element(By.CSS_SELECTOR, ".bg-shareable").is_selected(), "items are shareable by default"
    assert not badge.is_displayed()
    private.find_element(By.CSS_SELECTOR, ".switch").click()  # the person turns sharing off
    assert badge.is_displayed() and "is-private" in (private.get_attribute("class") or "")
    for i, (label, name) in enumerate([("Bob", "Bob Jones"), ("Carol", "Carol White")]):
        if i:
            driver.find_element(By.ID, "add-attendee").click()
        row = driver.find_elements(By.CSS_SELECTOR, ".att-row")[i]
        row.find_element(By.CSS_SELECTOR, ".att-label").send_keys(label)
        row.find_element(By.CSS_SELECTOR, ".att-name").send_keys(name)
    driver.find_element(By.ID, "f-meeting-id").send_keys(MEETING)
    driver.find_element(By.CSS_SELECTOR, "#f-engine option[value=local]").click()
    driver.find_element(By.CSS_SELECTOR, "input[name=approval][value=speech]").find_element(By.XPATH, "..").click()


def test_console_briefs_watches_and_approves_a_meeting_in_a_real_browser(
    make_server: Callable[..., LiveServer], browser: WebDriver
) -> None:
    live = make_server(api_tokens=TOKEN, approval_timeout_s=300)
    driver = browser

    # Sign in: a wrong token is refused on the page, the right one opens the brief.
    driver.get(f"{live.url}/")
    token_input = wait(driver, visible(driver, "#token-input"), "the token field")
    token_input.send_keys("not-the-token\n")
    error = wait(driver, visible(driver, "#token-error"), "the refused token")
    assert "not one of the server's tokens" in error.text
    type_into(token_input, TOKEN + "\n")
    wait(driver, visible(driver, "#brief-form"), "the brief form")

    # Brief: the server's 422 shows each refused field next to it; fixed, the meeting starts.
    fill_brief(driver)
    type_into(driver.find_element(By.ID, "f-meeting-id"), "not an id!")
    driver.find_element(By.ID, "brief-submit").click()
    message = wait(driver, visible(driver, '[data-error-for="principal.name"]'), "the name's error")
    field = message.find_element(By.XPATH, "..")
    assert field.get_attribute("data-field") == "principal.name" and "cannot be empty" in message.text
    assert driver.find_element(By.ID, "f-name").get_attribute("aria-invalid") == "true"
    bad_id = driver.find_element(By.CSS_SELECTOR, '[data-error-for="meeting_id"]')
    assert bad_id.is_displayed() and "letters, digits" in bad_id.text
    assert "2 highlighted fields" in driver.find_element(By.ID, "brief-error").text
    assert driver.execute_script("return location.pathname") == "/"
    screenshot(driver, "brief")
    type_into(driver.find_element(By.ID, "f-name"), "Alice Smith")
    type_into(driver.find_element(By.ID, "f-meeting-id"), MEETING)
    driver.find_element(By.ID, "brief-submit").click()
    wait(driver, lambda d: d.execute_script("return location.pathname") == f"/console/{MEETING}", "the watch page")
    wait(driver, visible(driver, "#m-conn.live"), "the live event stream")
    assert TOKEN not in driver.current_url
    assert driver.execute_script("return localStorage.length + sessionStorage.length + document.cookie.length") == 0

    # The bot gets its own token from the page, never the principal's.
    click(driver, "#m-bot summary", "Connect the meeting's bot")
    bot_token = wait(driver, lambda d: d.find_element(By.ID, "m-bot-token").get_attribute("value"), "the bot token")
    assert bot_token != TOKEN
    with bot_client(live, token=bot_token) as bot:
        bot.send({"type": "join"})
        bot.wait_for(lambda f: f.get("type") == "ack" and f.get("of") == "join")

        bot.say(0, "Bob", "Good morning everyone, let's go through the release checklist.")
        assert not bot.decision(0)["decision"]["speak"]
        silent = row_status(driver, 0, "none")
        assert "Stays silent" in silent and "Bob Jones" in silent

        # Approve: the bot hears nothing until the principal approves, then exactly that text.
        bot.say(1, "Bob", "Alice, can you tell us where the database migration stands?")
        row_status(driver, 1, "pending")
        assert "s left" in text_of(driver, "#row-1 .countdown", "the countdown to expiry")
        proposed = text_of(driver, "#row-1 .say", "the proposed speech").strip("“”")
        assert "Friday" in proposed
        used = text_of(driver, "#row-1 .used", "the background used")
        assert "The migration finishes on Friday" in used  # the background item by its text, not its index
        assert "1 awaiting you" in text_of(driver, "#m-pending-count", "the pending count")
        screenshot(driver, "watch-pending")
        assert not [f for f in bot.frames if f.get("type") == "decision" and f["decision"]["utterance_id"] == 1]
        click(driver, "#row-1 button.approve", "Approve")
        row_status(driver, 1, "approved")
        approved = bot.decision(1)
        assert approved["decision"]["speak"] == proposed and approved["approval"] == "approved"

        # Reject: the bot never gets the text.
        bot.say(2, "Carol", "Alice, what is the status of the budget review?")
        row_status(driver, 2, "pending")
        rejected_text = text_of(driver, "#row-2 .say", "the proposed speech").strip("“”")
        click(driver, "#row-2 button.reject", "Reject")
        row_status(driver, 2, "rejected")
        rejected = bot.decision(2)
        assert rejected["approval"] == "rejected" and not rejected["decision"]["speak"]

        # Edit: an edit giving the private item away is refused on the page; a fair one is sent as edited.
        bot.say(3, "Bob", "Alice, are you free on Thursday?")
        row_status(driver, 3, "pending")
        click(driver, "#row-3 button.edit", "Edit")
        type_into(wait(driver, visible(driver, "#row-3 .edit-text"), "the edit box"), EDIT_LEAKING)
        click(driver, "#row-3 .editor button.approve", "Approve edited text")
        assert "private" in text_of(driver, "#row-3 .note", "the private-text refusal").lower()
        screenshot(driver, "watch-edit-refused")
        assert driver.find_element(By.ID, "row-3").get_attribute("data-status") == "pending"
        type_into(driver.find_element(By.CSS_SELECTOR, "#row-3 .edit-text"), EDIT_OK)
        click(driver, "#row-3 .editor button.approve", "Approve edited text")
        row_status(driver, 3, "edited")
        assert EDIT_OK in text_of(driver, "#row-3 .say", "the edited speech")
        edited = bot.decision(3)
        assert edited["decision"]["speak"] == EDIT_OK and edited["approval"] == "edited"

        # Expire: another attendee takes the floor before the principal decides.
        bot.say(4, "Carol", "Alice, anything else on the database migration?")
        row_status(driver, 4, "pending")
        bot.say(5, "Bob", "Thanks all, see you next week.")
        row_status(driver, 4, "expired")
        assert "floor moved on to someone else" in text_of(driver, "#row-4 .why", "why it expired")
        assert not driver.find_elements(By.CSS_SELECTOR, "#row-4 .decide")

        bot.send({"type": "leave", "reason": "done"})
        wait(driver, visible(driver, "#m-conn.ended"), "the meeting's end")

    # What the bot's client was sent: the approved and the edited text, nothing rejected, expired or private.
    spoken = {f["decision"]["utterance_id"]: f["decision"]["speak"] for f in bot.frames if f.get("type") == "decision"}
    assert {uid: text for uid, text in spoken.items() if text} == {1: proposed, 3: EDIT_OK}
    sent = json.dumps(bot.frames)
    assert rejected_text not in sent and "interviewing" not in sent

    # Summary: what was decided and how each speech ended.
    wait(driver, visible(driver, "#m-summary"), "the summary")

    def figures(d: WebDriver) -> dict[str, int]:
        return {
            s.find_element(By.TAG_NAME, "span").text: int(s.find_element(By.TAG_NAME, "strong").text)
            for s in d.find_elements(By.CSS_SELECTOR, "#summary-stats .stat")
        }

    stats = wait(driver, figures, "the summary's figures")
    assert stats["decisions"] == 6 and stats["would speak"] == 4
    assert (stats["approved"], stats["edited"], stats["rejected"], stats["expired"]) == (1, 1, 1, 1)
    assert "done" in text_of(driver, "#summary-ended", "how the meeting ended")
    screenshot(driver, "summary")

    # The audit log, downloaded by the page as a file, is the server's log and holds every verdict.
    driver.find_element(By.ID, "download-audit").click()
    saved = driver.downloads / f"{MEETING}-audit.jsonl"  # type: ignore[attr-defined]
    wait(driver, lambda d: saved.exists() and saved.stat().st_size > 0, "the downloaded audit log")
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        served = http.get(f"/v1/meetings/{MEETING}/audit")
    assert served.status_code == 200 and saved.read_bytes() == served.content
    events = [json.loads(line) for line in saved.read_text().splitlines()]
    verdicts = {e["utterance_id"]: e["payload"]["status"] for e in events if e["kind"] == "speech_resolved"}
    assert verdicts == {1: "approved", 2: "rejected", 3: "edited", 4: "expired"}

    # Back to the list (the token is still in the tab's memory) and into the ended meeting again.
    driver.find_element(By.CSS_SELECTOR, "#view-meeting a.back").click()
    link = wait(driver, visible(driver, f'#meetings-list a[href="/console/{MEETING}"]'), "the meetings list")
    assert driver.find_element(By.ID, "view-token").is_displayed() is False
    link.click()
    wait(driver, visible(driver, "#m-summary"), "the summary of the ended meeting")
    row_status(driver, 3, "edited")

    # The bot's token does not open the console: the page says whose token it takes.
    click(driver, "#forget-token", "Forget token")
    type_into(wait(driver, visible(driver, "#token-input"), "the token field"), bot_token + "\n")
    assert "meeting bot's token" in text_of(driver, "#token-error", "the refused bot token")


def restart(live: LiveServer) -> LiveServer:
    """The same server again, on the same port and audit log, as after a deploy."""
    live.stop()
    return start_server(live.settings, live.port)


def test_console_without_tokens_asks_for_none_and_follows_the_meeting_across_a_restart(
    make_server: Callable[..., LiveServer], browser: WebDriver
) -> None:
    live = make_server()
    driver = browser
    driver.get(f"{live.url}/")
    wait(driver, visible(driver, "#brief-form"), "the brief form, with no token asked for")
    assert not driver.find_element(By.ID, "view-token").is_displayed()
    assert "no tokens" in driver.find_element(By.ID, "session-label").text
    driver.find_element(By.ID, "f-name").send_keys("Alice Smith")
    driver.find_element(By.ID, "f-aliases").send_keys("Alice")
    row = driver.find_element(By.CSS_SELECTOR, ".bg-row")
    row.find_element(By.CSS_SELECTOR, ".bg-context").send_keys("if asked about the database migration")
    row.find_element(By.CSS_SELECTOR, ".bg-information").send_keys("The migration finishes on Friday")
    driver.find_element(By.ID, "f-meeting-id").send_keys("restart-1")
    driver.find_element(By.CSS_SELECTOR, "input[name=approval][value=none]").find_element(By.XPATH, "..").click()
    assert driver.find_element(By.CSS_SELECTOR, "input[name=speaking][value=balanced]").is_selected(), "balanced by default"
    driver.find_element(By.CSS_SELECTOR, "input[name=speaking][value=addressed]").find_element(By.XPATH, "..").click()
    driver.find_element(By.ID, "brief-submit").click()
    wait(driver, visible(driver, "#m-conn.live"), "the live event stream")
    wait(driver, lambda d: "speaking: addressed" in d.find_element(By.ID, "m-meta").text, "the meeting's speaking level")

    with bot_client(live, "restart-1", token=None) as bot:
        bot.send({"type": "join"})
        bot.wait_for(lambda f: f.get("type") == "ack" and f.get("of") == "join")
        bot.say(0, "Bob", "Alice, where does the database migration stand?")
        said = bot.decision(0)["decision"]["speak"]
    assert said, "asked by name, the delegate answers"
    assert said in row_status(driver, 0, "sent")  # no approval: said at once, no buttons
    assert not driver.find_elements(By.CSS_SELECTOR, "#row-0 .decide")

    live = restart(live)
    with bot_client(live, "restart-1", token=None) as bot:
        bot.send({"type": "join", "last_utterance_id": 0})
        bot.wait_for(lambda f: f.get("type") == "ack" and f.get("of") == "join")
        bot.say(1, "Bob", "I will send the release notes to Carol by Friday.")
        bot.decision(1)
        row_status(driver, 1, "none")  # the page reconnected on its own
        assert len(driver.find_elements(By.CSS_SELECTOR, "#rows > li")) == 2  # the replay repeated no row
        wait(driver, visible(driver, "#m-conn.live"), "the stream live again")

        # An action item: proposed beside the transcript, rejected by the principal.
        proposed = text_of(driver, '#actions li[data-status="proposed"]', "the proposed action")
        assert "release notes" in proposed
        screenshot(driver, "watch-action")
        click(driver, '#actions li[data-status="proposed"] button.reject', "Reject on the action")
        text_of(driver, '#actions li[data-status="rejected"]', "the rejected action")
        assert not driver.find_elements(By.CSS_SELECTOR, "#actions .decide")
    with httpx.Client(base_url=live.url) as http:
        actions = http.get("/v1/meetings/restart-1/actions").json()
        speaking = http.get("/v1/meetings/restart-1").json()["speaking"]
    assert [a["status"] for a in actions] == ["rejected"]
    assert speaking == "addressed", "the meeting's level outlives the restart"


def test_console_shows_where_the_bot_stands_with_the_meeting(
    make_server: Callable[..., LiveServer], browser: WebDriver
) -> None:
    live = make_server()
    with httpx.Client(base_url=live.url) as http:
        body = {"meeting_id": "admission-1", "admission": "joining", "principal": {"name": "Alice Smith", "aliases": ["Alice"]}}
        assert http.post("/v1/meetings", json=body).status_code == 201
    driver = browser
    driver.get(f"{live.url}/console/admission-1")
    wait(driver, visible(driver, "#m-conn.live"), "the live event stream")
    assert text_of(driver, "#m-admission", "the admission") == "Bot joining"
    with bot_client(live, "admission-1", token=None) as bot:
        steps = [("waiting_room", "Waiting to be admitted"), ("in_meeting", "In the meeting"),
                 ("removed", "Removed from the meeting")]
        for n, (state, shown) in enumerate(steps, 1):
            bot.send({"type": "admission", "state": state})
            bot.wait_for(lambda f, n=n: sum(g.get("of") == "admission" for g in bot.frames) == n)
            wait(driver, lambda d, shown=shown: d.find_element(By.ID, "m-admission").text == shown, shown)
            if state == "in_meeting":
                assert "AI delegate" in bot.wait_for(lambda f: f.get("type") == "disclosure")["text"]
    assert driver.find_element(By.ID, "m-admission").get_attribute("data-state") == "removed"
