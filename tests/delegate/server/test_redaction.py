"""Nothing private at rest: what the principal types about private matters (questions, edits, comments) reaches
the audit log redacted, on a real server; the rule itself in isolation."""

from __future__ import annotations

import json

import httpx

from delegate.ask.base import Answer
from delegate.models import Profile
from delegate.server.session.redaction import ANSWER_WITHHELD, TYPED_WITHHELD, answer_record, typed
from delegate.store import AuditKind, read_events
from testkit.live import LiveServer, expect_error, join, open_ws, recv, send, texts
from tests.delegate.server.test_roles import ASKED, BRIEF, leaks, next_of

PROBED = "Should I tell them Globex offered 340 million dollars, or keep that quiet?"
"""The question of issue 34, asked about the private item."""


def test_typed_text_that_gives_a_private_item_away_is_kept_as_a_placeholder() -> None:
    principal = Profile.model_validate(BRIEF)
    assert typed(PROBED, principal, []) == TYPED_WITHHELD
    assert typed("Who writes the release notes?", principal, []) == "Who writes the release notes?"
    # Spelled out or in words, as the guard reads a spoken reply.
    assert typed("keep G-L-O-B-E-X quiet", principal, []) == typed("three hundred forty million?", principal, []) == TYPED_WITHHELD
    assert typed("", principal, []) == ""


def test_an_answer_record_redacts_its_question_and_its_private_text_and_rounds_its_latency() -> None:
    principal = Profile.model_validate(BRIEF)
    answer = Answer(
        question=PROBED, question_type="what", text="Your notes: Globex offered 340 million dollars for the analytics unit",
        answered=True, background_items=[1], confidence=0.9, engine="local", latency_ms=12.3456789,
    )
    record = answer_record(answer, principal, [])
    assert record["question"] == TYPED_WITHHELD and record["text"] == ANSWER_WITHHELD and record["latency_ms"] == 12.35
    assert not leaks(record)
    shared = answer.model_copy(update={"question": "Who?", "text": "Carol.", "background_items": []})
    assert answer_record(shared, principal, [])["text"] == "Carol."


async def test_after_the_principal_asks_about_and_edits_private_matters_the_audit_holds_none(server: LiveServer) -> None:
    ws = await open_ws(server, "redacted")
    await join(ws, principal=BRIEF, attendees=["Bob"], approval="speech")
    await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": ASKED})
    assert (await recv(ws))["type"] == "ack"
    await send(ws, {"type": "ask", "id": "ws", "audience": "principal", "question": PROBED})
    mine = await next_of(ws, "answer")
    assert mine["answer"]["question"] == PROBED  # the principal reads it back as typed; only the record is redacted
    async with httpx.AsyncClient(base_url=server.url) as http:
        r = await http.post("/v1/meetings/redacted/ask", json={"question": PROBED, "audience": "principal"})
        assert r.status_code == 200 and "Globex" in r.json()["text"]
        edit = {"verdict": "approve", "text": "Globex offered 340 million.", "comment": "Globex must not hear 340"}
        refused = await http.post("/v1/meetings/redacted/speech/0", json=edit)
        assert refused.status_code == 422 and refused.json()["code"] == "private_text"
        await send(ws, {"type": "feedback", "utterance_id": 0, **edit})
        await expect_error(ws, "private_text")
        settled = await http.post(
            "/v1/meetings/redacted/speech/0", json={"verdict": "reject", "comment": "not with Globex at 340 on the table"}
        )
        assert settled.status_code == 200 and settled.json()["status"] == "rejected"
    await send(ws, {"type": "leave", "reason": "Globex call at 340"})
    await next_of(ws, "ack")
    await ws.close()

    events = read_events(server.settings.db_path, "redacted")
    kinds = [e.kind for e in events]
    assert kinds.count(AuditKind.ask) == 2 and kinds.count(AuditKind.edit_refused) == 2
    assert AuditKind.speech_resolved in kinds and kinds[-1] == AuditKind.left
    assert not leaks([e.payload for e in events])
    asks = [e.payload for e in events if e.kind in (AuditKind.ask, AuditKind.answer)]
    assert {a["question"] for a in asks} == {TYPED_WITHHELD}
    download = [json.loads(line) for line in httpx.get(f"{server.url}/v1/meetings/redacted/audit").text.splitlines()]
    assert len(download) == len(events) and not leaks(download) and texts(download)
