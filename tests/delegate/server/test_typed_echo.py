"""Regression: a typed turn by another speaker is never taken for the delegate's echo (issue 27, item 1)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from delegate.store import AuditKind, read_events
from delegate.voice.stream import load_synthesizer
from testkit.live import LiveServer, frame, join, open_ws, send

DANA = {
    "name": "Dana Reyes",
    "aliases": ["Dana"],
    "background": [{"context": "if asked about the release", "information": "The release ships on Thursday"}],
}
PLAIN = ["Let's move on to item 0.", "The build has been green all week.", "Okay, that sounds fine to me.",
         "We looked at the numbers yesterday."]


@pytest.fixture
def voiced(make_server: Any) -> LiveServer:
    load_synthesizer()
    return make_server(voice=True)


async def test_typed_turns_by_others_are_all_decided_while_the_delegate_speaks(voiced: LiveServer) -> None:
    turns = (PLAIN + ["Dana, when does the release ship?"]) * 2
    decided: list[int] = []
    async with await open_ws(voiced, "echo-1") as ws:
        await join(ws, DANA)
        for uid, text in enumerate(turns):
            await send(ws, {"type": "utterance", "id": uid, "speaker": ["Ana", "Ben"][uid % 2], "text": text})
            while True:
                f = await frame(ws, 20.0)
                if isinstance(f, dict) and f["type"] == "decision":
                    decided.append(f["decision"]["utterance_id"])
                    break
            await asyncio.sleep(0.5)
    assert decided == list(range(len(turns)))
    echoes = [e for e in read_events(voiced.settings.db_path, "echo-1") if e.kind == AuditKind.echo]
    assert echoes == []


async def test_a_bot_typing_back_the_delegates_reply_unattributed_is_an_echo(voiced: LiveServer) -> None:
    async with await open_ws(voiced, "echo-2") as ws:
        await join(ws, DANA)
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Ana", "text": "Dana, when does the release ship?"})
        while True:
            f = await frame(ws, 20.0)
            if isinstance(f, dict) and f["type"] == "speech_start":
                reply = f["text"]
                break
        await send(ws, {"type": "utterance", "id": 1, "speaker": "unknown", "text": reply})
        while True:
            f = await frame(ws, 20.0)
            if isinstance(f, dict) and f["type"] == "ack" and f.get("utterance_id") == 1:
                break
    echoes = [e.payload for e in read_events(voiced.settings.db_path, "echo-2") if e.kind == AuditKind.echo]
    assert [e["of_utterance_id"] for e in echoes] == [0]
    utterances = [e.utterance_id for e in read_events(voiced.settings.db_path, "echo-2") if e.kind == AuditKind.utterance]
    assert utterances == [0]
