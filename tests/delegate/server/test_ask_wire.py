"""Ask the delegate over the wire, against a real uvicorn server on 127.0.0.1: the `ask` frame and the REST call."""

from __future__ import annotations

from typing import Any

import httpx

from delegate.ask.base import NO_ANSWER
from delegate.store import AuditKind, read_events
from testkit.live import ALICE, LiveServer, join, open_ws, recv, send, texts


async def next_of(ws: Any, kind: str) -> dict[str, Any]:
    """The next frame of `kind`, past the decisions, acks and action proposals the utterances bring."""
    for _ in range(50):
        frame = await recv(ws)
        if frame["type"] == kind:
            return frame
    raise AssertionError(f"no {kind} frame")


async def say(ws: Any, uid: int, speaker: str, text: str) -> None:
    await send(ws, {"type": "utterance", "id": uid, "speaker": speaker, "text": text})
    await next_of(ws, "decision")


TIMELINE = [
    (0, "Bob", "Good morning, let's go through the release checklist."),
    (1, "Carol", "The build has been green since Tuesday."),
    (2, "Bob", "Who will write the release notes this time?"),
    (3, "Carol", "I will write the release notes, they will be ready on Thursday."),
]


async def test_ask_frame_is_answered_from_the_meeting_and_audited(server: LiveServer) -> None:
    ws = await open_ws(server, "ask-ws")
    await join(ws)
    for uid, speaker, text in TIMELINE:
        await say(ws, uid, speaker, text)
    await send(ws, {"type": "ask", "id": "q1", "question": "Who will write the release notes?"})
    frame = await next_of(ws, "answer")
    assert frame["id"] == "q1" and frame["meeting_id"] == "ask-ws"
    answer = frame["answer"]
    assert answer["answered"] and answer["text"].startswith("Carol") and answer["turn_ids"] == [3]
    assert answer["speakers"] == ["Carol"] and answer["question_type"] == "who"

    await send(ws, {"type": "ask", "id": 2, "question": "Who is catering the summer party?"})
    frame = await next_of(ws, "answer")
    assert frame["id"] == 2 and not frame["answer"]["answered"]

    await send(ws, {"type": "ask", "question": "x", "bogus": 1})
    error = await next_of(ws, "error")
    assert error["code"] == "bad_message" and "bogus" in error["detail"]
    await ws.close()

    events = read_events(server.settings.db_path, "ask-ws")
    asks = [e for e in events if e.kind is AuditKind.ask]
    answers = [e for e in events if e.kind is AuditKind.answer]
    assert [e.payload["id"] for e in asks] == ["q1", 2] and asks[0].utterance_id == 3
    assert answers[0].payload["text"] == answer["text"] and answers[0].payload["turn_ids"] == [3]


async def test_rest_ask_answers_from_the_session(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        created = await http.post("/v1/meetings", json={"meeting_id": "ask-rest", "principal": ALICE})
        assert created.status_code == 201
        ws = await open_ws(server, "ask-rest")
        await join(ws, principal=None)
        for uid, speaker, text in TIMELINE:
            await say(ws, uid, speaker, text)
        r = await http.post("/v1/meetings/ask-rest/ask", json={"question": "When will the release notes be ready?"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["answered"] and body["text"].startswith("Thursday") and body["turn_ids"] == [3]

        missing = await http.post("/v1/meetings/nope/ask", json={"question": "Who?"})
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
        extra = await http.post("/v1/meetings/ask-rest/ask", json={"question": "Who?", "deep": {"x": 1}})
        assert extra.status_code == 422 and extra.json()["code"] == "bad_message"
        await ws.close()
    kinds = [e.kind for e in read_events(server.settings.db_path, "ask-rest")]
    assert AuditKind.ask in kinds and AuditKind.answer in kinds


BUDGET_PRIVATE = {
    **ALICE,
    "background": [
        *ALICE["background"],
        {"context": "if the budget comes up", "information": "Our budget ceiling is 48000 euros", "shareable": False},
    ],
}


async def test_an_ask_without_audience_is_answered_for_the_meeting_without_private_notes(server: LiveServer) -> None:
    # Issue 27: a bot's `ask` without an audience got "Your notes: Our budget ceiling is 48000 euros".
    question = "What is our budget ceiling for the vendor?"
    ws = await open_ws(server, "ask-default")
    await join(ws, principal=BUDGET_PRIVATE)
    await say(ws, 0, "Bob", "We have to agree the budget ceiling for the vendor contract.")
    await send(ws, {"type": "ask", "id": "bot", "question": question})
    relayed = (await next_of(ws, "answer"))["answer"]
    assert "48000" not in relayed["text"] and "notes" not in relayed["text"] and relayed["background_items"] == []
    await send(ws, {"type": "ask", "id": "mine", "audience": "principal", "question": question})
    mine = (await next_of(ws, "answer"))["answer"]
    assert "48000" in mine["text"] and mine["background_items"] == [len(ALICE["background"])]
    async with httpx.AsyncClient(base_url=server.url) as http:
        r = await http.post("/v1/meetings/ask-default/ask", json={"question": question})
        assert r.status_code == 200 and "48000" not in r.json()["text"]
        r = await http.post("/v1/meetings/ask-default/ask", json={"question": question, "audience": "principal"})
        assert r.status_code == 200 and "48000" in r.json()["text"]
    await ws.close()
    asks = [e.payload for e in read_events(server.settings.db_path, "ask-default") if e.kind is AuditKind.ask]
    assert [a["audience"] for a in asks] == ["meeting", "principal", "meeting", "principal"]


async def test_private_notes_answer_the_principal_but_are_not_audited(server: LiveServer) -> None:
    principal = BUDGET_PRIVATE
    ws = await open_ws(server, "ask-private")
    await join(ws, principal=principal)
    await say(ws, 0, "Bob", "We have to agree the budget ceiling for the vendor contract.")
    await send(ws, {"type": "ask", "id": "mine", "audience": "principal", "question": "What is our budget ceiling for the vendor?"})
    mine = (await next_of(ws, "answer"))["answer"]
    assert "48000" in mine["text"]
    await send(ws, {"type": "ask", "id": "shared", "audience": "meeting", "question": "What is our budget ceiling for the vendor?"})
    shared = (await next_of(ws, "answer"))["answer"]
    assert "48000" not in shared["text"]
    await ws.close()
    # The texts of the log, not its numbers: a latency's digits may spell 48000 by chance.
    written = [t for e in read_events(server.settings.db_path, "ask-private") for t in texts(e.payload)]
    assert written and not [t for t in written if "48000" in t]


def test_the_ask_command_asks_a_running_server(server: LiveServer) -> None:
    from typer.testing import CliRunner

    from delegate.__main__ import app

    created = httpx.post(f"{server.url}/v1/meetings", json={"meeting_id": "ask-cli", "principal": ALICE})
    assert created.status_code == 201
    run = CliRunner().invoke(app, ["ask", "ask-cli", "Who will write the notes?", "--url", server.url])
    assert run.exit_code == 0, run.output
    assert "Nothing in the meeting so far says." in run.output
    missing = CliRunner().invoke(app, ["ask", "nope", "Who?", "--url", server.url])
    assert missing.exit_code == 1 and "not_found" in missing.output


async def test_an_unsure_answer_is_audited_as_unanswered(server: LiveServer) -> None:
    """"When will the fix be merged?" once answered "tomorrow" from a turn about something else; below the
    calibrated threshold the answer says nothing in the meeting does, and the audit records it unanswered."""
    ws = await open_ws(server, "ask-unsure")
    await join(ws)
    for uid, speaker, text in [
        (0, "Bob", "Good morning, let's go through the release checklist."),
        (1, "Carol", "The fix for the login page is in review."),
        (2, "Bob", "Let's meet again tomorrow about the dashboard colours."),
    ]:
        await say(ws, uid, speaker, text)
    await send(ws, {"type": "ask", "id": "fix", "question": "When will the fix be merged?"})
    answer = (await next_of(ws, "answer"))["answer"]
    assert not answer["answered"] and answer["text"] == NO_ANSWER and answer["turn_ids"] == []
    await ws.close()

    answers = [e for e in read_events(server.settings.db_path, "ask-unsure") if e.kind is AuditKind.answer]
    assert len(answers) == 1 and answers[0].payload["id"] == "fix"
    assert answers[0].payload["answered"] is False and answers[0].payload["text"] == NO_ANSWER
    assert answers[0].payload["confidence"] == 0.0
