"""`delegate listen`: a recording in, the decisions the delegate would have made live out."""

from __future__ import annotations

import io

from rich.console import Console

from benchmark.asr import AUDIO_FIXTURES
from delegate.config import Settings
from delegate.listen import run_listen
from delegate.models import Scenario


def test_listen_answers_the_name_cue_in_a_recording():
    out = io.StringIO()
    results = run_listen(
        AUDIO_FIXTURES / "name_cue.wav",
        AUDIO_FIXTURES / "principal_sirui.json",
        settings=Settings(engine="local"),
        console=Console(file=out, width=200),
    )
    assert [u.id for u, _ in results] == [0, 1]
    greeting, cue = results
    assert not greeting[1].spoke
    assert "Sirui" in cue[0].text
    assert cue[1].spoke and cue[1].scenario is Scenario.explicit_cue
    assert "data collection" in cue[1].speak
    printed = out.getvalue()
    assert "Sirui Zhao (delegate) says" in printed
    assert "the delegate would have spoken 1 time." in printed
