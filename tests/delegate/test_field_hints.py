"""A misspelt field is refused with the name it was probably meant to be, wherever a brief comes in."""

from __future__ import annotations

import json

import httpx
import pytest

from benchmark.asr import AUDIO_FIXTURES
from delegate.config import Settings
from delegate.listen import ListenInputError, run_listen
from delegate.server.protocol import ProtocolError, parse_client_message
from testkit.live import ALICE, start_server

MISSPELT = {**ALICE, "background": [{**ALICE["background"][0], "sharable": False}]}  # type: ignore[index]


def test_the_wire_names_the_field_meant() -> None:
    with pytest.raises(ProtocolError) as refused:
        parse_client_message(json.dumps({"type": "join", "principal": MISSPELT}))
    assert "principal.background.0.sharable: Extra inputs are not permitted (did you mean `shareable`?)" in str(refused.value)
    with pytest.raises(ProtocolError) as unknown:
        parse_client_message(json.dumps({"type": "join", "principal": {**ALICE, "colour": "blue"}}))
    assert "did you mean" not in str(unknown.value)  # nothing close: no guess


def test_rest_names_the_field_meant(tmp_path) -> None:
    live = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="", log_level="warning", voice=False))
    try:
        r = httpx.post(f"{live.url}/v1/meetings", json={"meeting_id": "m-1", "principal": MISSPELT}, timeout=30)
    finally:
        live.stop()
    assert r.status_code == 422 and "did you mean `shareable`?" in r.json()["detail"], r.text


def test_listen_names_the_field_meant(tmp_path) -> None:
    brief = tmp_path / "brief.json"
    brief.write_text(json.dumps(MISSPELT), encoding="utf-8")
    with pytest.raises(ListenInputError, match=r"did you mean `shareable`\?"):
        run_listen(AUDIO_FIXTURES / "cue_named.wav", brief, settings=Settings(engine="local"))
