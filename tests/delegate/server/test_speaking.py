"""The speaking level through a real uvicorn server: set per meeting (join frame, REST create) or in the brief."""

from __future__ import annotations

from typing import Any

import httpx

from testkit.live import LiveServer, expect_error, join, open_ws, say, send

PRIYA: dict[str, Any] = {
    "name": "Priya Raman",
    "label": "P2",
    "aliases": ["Priya"],
    "intents": ["Whether the crash fix can ship in release 5.4"],
    "background": [
        {
            "context": "When the crash on Android 14 is discussed",
            "information": "The crash comes from the image cache on Android 14; my fix is merged and QA verified it on Tuesday.",
        },
        {"context": "When the app store review is discussed", "information": "Apple review usually takes two days for us."},
    ],
}
NAMES = {"P1": "Dana Smith", "P2": "Priya Raman", "P3": "Tomasz Kowalski", "P4": "Amara Okafor"}
# Nobody asks Priya anything; the talk reaches what her brief knows (a chime-in chance).
CHIME_IN = [
    (0, "P1", "Let's plan the launch."),
    (1, "P2", "I am here for the crash topic."),
    (2, "P3", "Marketing wants the launch on the 14th."),
    (3, "P4", "Then we must submit to the app store early, I am not sure how long the app store review takes for us."),
]
NAMED = (4, "P1", "Priya, where are we with the Android crash?")


async def _meeting(ws: Any, **join_fields: Any) -> list[dict[str, Any]]:
    await join(ws, principal=join_fields.pop("principal", PRIYA), attendees=list(NAMES), names=NAMES, **join_fields)
    return [(await say(ws, uid, who, text))["decision"] for uid, who, text in [*CHIME_IN, NAMED]]


async def test_an_addressed_delegate_stays_silent_on_a_chime_in_a_forward_one_answers(server: LiveServer) -> None:
    async with await open_ws(server, "forward-1") as ws:
        forward = await _meeting(ws, speaking="forward")
    async with await open_ws(server, "addressed-1") as ws:
        addressed = await _meeting(ws, speaking="addressed")
    assert forward[3]["scenario"] == "chime_in" and forward[3]["speak"].strip()
    assert addressed[3]["scenario"] == "none" and not addressed[3]["speak"]
    assert "addressed" in addressed[3]["reason"]
    # Named, both answer.
    assert forward[4]["scenario"] == addressed[4]["scenario"] == "explicit_cue"
    assert forward[4]["speak"].strip() and addressed[4]["speak"].strip()
    async with httpx.AsyncClient(base_url=server.url) as http:
        assert (await http.get("/v1/meetings/forward-1")).json()["speaking"] == "forward"
        assert (await http.get("/v1/meetings/addressed-1")).json()["speaking"] == "addressed"


async def test_the_brief_sets_the_level_and_a_meeting_may_override_it(server: LiveServer) -> None:
    forward_brief = {**PRIYA, "speaking": "forward"}
    async with httpx.AsyncClient(base_url=server.url) as http:
        from_brief = await http.post("/v1/meetings", json={"meeting_id": "brief-forward", "principal": forward_brief,
                                                            "attendees": list(NAMES), "names": NAMES})
        overridden = await http.post("/v1/meetings", json={"meeting_id": "meeting-addressed", "principal": forward_brief,
                                                           "attendees": list(NAMES), "names": NAMES, "speaking": "addressed"})
        default = await http.post("/v1/meetings", json={"meeting_id": "default", "principal": PRIYA,
                                                        "attendees": list(NAMES), "names": NAMES})
        assert from_brief.status_code == overridden.status_code == default.status_code == 201
        infos = {m: (await http.get(f"/v1/meetings/{m}")).json()["speaking"] for m in ("brief-forward", "meeting-addressed", "default")}
        assert infos == {"brief-forward": "forward", "meeting-addressed": "addressed", "default": "balanced"}
        refused = await http.post("/v1/meetings", json={"principal": PRIYA, "speaking": "loud"})
        assert refused.status_code == 422
    decided = {}
    for meeting_id in ("brief-forward", "meeting-addressed"):
        async with await open_ws(server, meeting_id) as ws:
            await join(ws, principal=None)
            decided[meeting_id] = [(await say(ws, uid, who, text))["decision"] for uid, who, text in CHIME_IN]
    assert decided["brief-forward"][3]["speak"].strip()
    assert not decided["meeting-addressed"][3]["speak"]


async def test_an_unknown_level_is_one_error_frame_and_the_connection_goes_on(server: LiveServer) -> None:
    async with await open_ws(server, "loud-1") as ws:
        await send(ws, {"type": "join", "principal": PRIYA, "speaking": "loud"})
        frame = await expect_error(ws, "bad_message")
        assert "speaking" in frame["detail"]
        await send(ws, {"type": "join", "principal": {**PRIYA, "speaking": "shy"}})
        assert "speaking" in (await expect_error(ws, "bad_message"))["detail"]
        await join(ws, speaking="balanced", attendees=list(NAMES), names=NAMES)
        assert (await say(ws, *CHIME_IN[0]))["decision"]["utterance_id"] == 0
