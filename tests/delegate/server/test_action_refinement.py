"""Action items refined by the LLM in a live meeting: the embedded proposal at once, the refined one after."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from delegate.actions import ActionExtractor
from delegate.actions.refiner import LLMActionRefiner
from delegate.config import Settings
from delegate.llm.client import make_client
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Decision, Profile, Scenario
from delegate.server.metrics import Metrics
from delegate.server.protocol import ActionMessage, MeetingSpec, ServerMessage, UtteranceIn
from delegate.server.registry import MeetingSession
from delegate.store import AuditKind, SQLiteStore, read_events
from testkit.fake_openai import Reply, ScriptedOpenAI
from testkit.live import LiveServer, join, open_ws, recv, send

SECRET = "Interviewing with Northwind Labs on the 14th"
PRINCIPAL = {
    "name": "Alice Smith",
    "aliases": ["Alice"],
    "background": [
        {"context": "if asked about the release", "information": "The release notes are drafted"},
        {"context": "if job plans come up", "information": SECRET, "shareable": False},
    ],
}
SAID = "I will, I will send the the release notes to to everyone uh by Friday."
REFINED = {
    "id": "a1",
    "action_type": "share_document",
    "description": "Send the release notes to everyone.",
    "assignees": ["Carol"],
    "due": "by Friday",
    "utterance_id": 1,
    "supporting_excerpt": "send the the release notes to to everyone uh by Friday",
}
CANDIDATES = "# Candidates from the rule-based extractor"


def scripted(refine: Reply) -> Callable[[str], Reply | str]:
    """Refinement prompts get `refine`; engagement prompts, silence."""

    def answer(prompt: str) -> Reply | str:
        if CANDIDATES in prompt:
            return refine
        return json.dumps({"thoughts": "Not for Alice.", "scenario": "none", "speak": ""})

    return answer


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(scripted(Reply(content=json.dumps({"actions": [REFINED]})))) as s:
        yield s


def llm_settings(llm: ScriptedOpenAI) -> dict[str, Any]:
    return {
        "llm_base_url": llm.base_url,
        "llm_api_key": "test-key",
        "llm_model": "scripted-model",
        "llm_timeout_s": 1.0,
        "llm_retries": 0,
    }


async def test_a_hybrid_meeting_gets_the_embedded_action_then_the_refined_one(
    make_server: Callable[..., LiveServer], llm: ScriptedOpenAI
) -> None:
    # The refinement is answered only once the test holds the embedded proposal: had that proposal waited
    # for the LLM, it would never come.
    seen_embedded = threading.Event()
    refining: list[bool] = []  # per refinement answered: whether the embedded proposal was out by then
    answer = scripted(Reply(content=json.dumps({"actions": [REFINED]})))

    def held(prompt: str) -> Reply | str:
        if CANDIDATES in prompt:
            refining.append(seen_embedded.wait(10))
        return answer(prompt)

    llm.reset(held)
    server = make_server(engine="hybrid", **llm_settings(llm))
    try:
        async with await open_ws(server, "refined") as ws:
            await join(ws, principal=PRINCIPAL, attendees=["Bob", "Carol", "Alice Smith"])
            frames: list[dict[str, Any]] = []
            for uid, speaker, text in [(0, "Bob", "Where are we with the release notes?"), (1, "Carol", SAID)]:
                await send(ws, {"type": "utterance", "id": uid, "speaker": speaker, "text": text})
            while sum(f["type"] == "action" for f in frames) < 2 or not any(
                f["type"] == "decision" and f["decision"]["utterance_id"] == 1 for f in frames
            ):
                frames.append(await recv(ws))
                if frames[-1]["type"] == "action":
                    seen_embedded.set()
    finally:
        seen_embedded.set()  # never leave the shared scripted server blocked
    assert refining == [True], "the embedded proposal waits for no LLM"
    actions = [f["action"] for f in frames if f["type"] == "action"]
    first, refined = actions
    assert first["id"] == refined["id"] == "a1"
    assert first["assignees"] == ["Carol"] and first["supporting_excerpt"] == SAID
    assert first["description"] == "Send the release notes to everyone by Friday."
    assert refined["description"] == "Send the release notes to everyone."
    assert refined["action_type"] == "share_document" and refined["due"] == "by Friday"
    assert refined["supporting_excerpt"] in SAID and refined["status"] == "proposed"

    async with httpx.AsyncClient(base_url=server.url) as http:
        listed = (await http.get("/v1/meetings/refined/actions")).json()
    assert listed == [refined]
    rows = [e for e in read_events(server.settings.db_path, "refined") if e.kind == AuditKind.action]
    assert [(r.payload["event"], r.payload.get("source")) for r in rows] == [
        ("proposed", None),
        ("updated", "refiner"),
    ]
    assert rows[1].payload["description"] == "Send the release notes to everyone."
    assert any(CANDIDATES in p for p in llm.prompts)
    assert not any(SECRET in p or "Northwind" in p for p in llm.prompts)


async def test_a_local_meeting_asks_no_llm_about_actions(
    make_server: Callable[..., LiveServer], llm: ScriptedOpenAI
) -> None:
    llm.reset()
    server = make_server(engine="local", **llm_settings(llm))
    async with await open_ws(server, "local") as ws:
        await join(ws, principal=PRINCIPAL)
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Carol", "text": SAID})
        frames = [await recv(ws) for _ in range(3)]
        await asyncio.sleep(0.3)
    assert frames[0]["type"] == "ack" and {f["type"] for f in frames[1:]} == {"action", "decision"}
    assert llm.prompts == []


# --- the session on its own -----------------------------------------------------------------------


class Silent:
    name = "hybrid"

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision:
        assert meeting.last is not None
        return Decision(
            utterance_id=meeting.last.id,
            scenario=Scenario.none,
            reason="quiet",
            confidence=0.9,
            engine=self.name,
        )


class Recorder:
    def __init__(self) -> None:
        self.frames: list[ServerMessage] = []

    async def send(self, message: ServerMessage) -> None:
        self.frames.append(message)

    async def close(self, code: int, reason: str) -> None:
        pass

    def actions(self) -> list[ActionMessage]:
        return [f for f in self.frames if isinstance(f, ActionMessage)]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "audit.sqlite")
    s.open()
    yield s
    await s.close()


def session_with_refiner(store: SQLiteStore, llm: ScriptedOpenAI) -> MeetingSession:
    settings = Settings(**llm_settings(llm))
    principal = Profile(
        name="Alice Smith", background=[BackgroundItem(context="jobs", information=SECRET, shareable=False)]
    )
    refiner = LLMActionRefiner(
        ActionExtractor(principal=principal.speaker_label), make_client(settings), settings
    )
    return MeetingSession(
        "m",
        MeetingSpec(principal=principal, attendees=["Bob", "Carol"]),
        Silent(),
        store,
        Metrics(),
        owner="anonymous",
        max_text_chars=1000,
        actions=refiner,
    )


async def wait_for(condition: Callable[[], bool], seconds: float = 3.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met in time")


async def test_not_an_action_goes_out_rejected_and_is_audited_so(
    store: SQLiteStore, llm: ScriptedOpenAI
) -> None:
    llm.reset(scripted(Reply(content=json.dumps({"actions": []}))))
    conn = Recorder()
    async with session_with_refiner(store, llm) as session:
        await session.handle(UtteranceIn(type="utterance", id=0, speaker="Carol", text=SAID), conn)
        await wait_for(lambda: len(conn.actions()) == 2)
        assert session.actions["a1"].status == "rejected"
    assert [(m.action.id, m.action.status) for m in conn.actions()] == [
        ("a1", "proposed"),
        ("a1", "rejected"),
    ]
    rows = [e.payload for e in read_events(store.path, "m") if e.kind == AuditKind.action]
    assert [(r["event"], r.get("source")) for r in rows] == [("proposed", None), ("rejected", "refiner")]


async def test_a_failing_llm_keeps_the_embedded_action_and_decisions_go_on(
    store: SQLiteStore, llm: ScriptedOpenAI
) -> None:
    llm.reset(scripted(Reply(status=500)))
    conn = Recorder()
    async with session_with_refiner(store, llm) as session:
        await session.handle(UtteranceIn(type="utterance", id=0, speaker="Carol", text=SAID), conn)
        await session.handle(
            UtteranceIn(type="utterance", id=1, speaker="Bob", text="Thanks, next item."), conn
        )
        await wait_for(lambda: not session.refining and len(session.decisions) == 2)
    assert [m.action.description for m in conn.actions()] == ["Send the release notes to everyone by Friday."]
    assert [d.utterance_id for d in session.decisions] == [0, 1]
    assert not any(SECRET in p for p in llm.prompts)


async def test_closing_drops_a_refinement_in_flight(store: SQLiteStore, llm: ScriptedOpenAI) -> None:
    llm.reset(scripted(Reply(content=json.dumps({"actions": [REFINED]}), delay_s=0.5)))
    conn = Recorder()
    session = session_with_refiner(store, llm)
    await session.start()
    await session.handle(UtteranceIn(type="utterance", id=0, speaker="Carol", text=SAID), conn)
    await wait_for(lambda: len(llm.prompts) == 1)
    await session.close("ended")
    await asyncio.sleep(0.1)
    assert not session.refining
    assert len(conn.actions()) == 1
    kinds = [e.kind for e in read_events(store.path, "m")]
    assert kinds[-1] == AuditKind.closed and kinds.count(AuditKind.action) == 1


async def test_an_llm_leak_never_leaves_a_live_meeting_and_its_record_holds_no_secret(
    make_server: Callable[..., LiveServer], llm: ScriptedOpenAI
) -> None:
    def leaky(prompt: str) -> Reply | str:
        if CANDIDATES in prompt:
            return json.dumps({"actions": [{**REFINED, "description": "Send the release notes to Northwind."}]})
        return json.dumps(
            {"thoughts": "She is talking to N-o-r-t-h-w-i-n-d.", "scenario": "explicit_cue",
             "speak": "Between us: I'm interviewing at Northwind."}
        )  # fmt: skip

    llm.reset(leaky)
    live = make_server(engine="llm", **llm_settings(llm) | {"llm_timeout_s": 10.0})
    frames: list[dict[str, Any]] = []
    async with await open_ws(live, "leaky") as ws:
        await join(ws, PRINCIPAL, attendees=["Bob", "Carol"])
        for uid, (who, text) in enumerate([("Bob", "Alice, any plans for the summer?"), ("Carol", SAID)]):
            await send(ws, {"type": "utterance", "id": uid, "speaker": who, "text": text})
            while (frame := await recv(ws, timeout=15))["type"] != "decision":
                frames.append(frame)
            frames.append(frame)
        await asyncio.sleep(1.0)  # the refinement of Carol's action comes after its decision
        await send(ws, {"type": "leave"})
        while (frame := await recv(ws, timeout=15))["type"] != "ack":
            frames.append(frame)
    decisions = [f["decision"] for f in frames if f["type"] == "decision"]
    assert decisions[0]["reason"].startswith("llm fallback (private_leak)")
    sent = json.dumps(frames)
    assert "Northwind" not in sent and "N-o-r-t-h" not in sent
    recorded = json.dumps([e.payload for e in read_events(live.settings.db_path, "leaky")])
    assert "Northwind" not in recorded and "N-o-r-t-h" not in recorded
    assert any(f["type"] == "action" for f in frames)  # the embedded action still went out
