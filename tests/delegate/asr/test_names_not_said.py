"""A name checked against the audio and not said reaches the decision, which then reads no look-alike as it."""

from __future__ import annotations

import numpy as np
import pytest

from benchmark.asr import REAL_SPEECH, load_clips
from delegate.addressing import Roster, named
from delegate.asr.names_heard import Heard, not_said
from delegate.asr.whisper import SAMPLE_RATE, StreamingTranscriber, load_speech_model, read_audio
from delegate.decide.cues import detect
from delegate.language.names import Reference, find
from delegate.meeting import MeetingState
from delegate.models import Profile, Scenario, Utterance
from delegate.server.protocol import UtteranceIn

ANNA = Profile(name="Anna Schmidt", label="P2", aliases=["Anna"])
NAMES = {"P1": "Dana Smith", "P2": "Anna Schmidt", "P3": "Eero Virtanen"}
LOOK_ALIKE = "Rain, every example, go ahead."


def _meeting(utterance: Utterance) -> MeetingState:
    state = MeetingState("m", attendees=list(NAMES), names=NAMES)
    state.add(Utterance(id=0, speaker="P1", text="Let's look at the examples."))
    state.add(utterance)
    return state


def test_a_look_alike_word_is_a_name_until_the_recogniser_says_the_name_was_not_said():
    heard = Utterance(id=1, speaker="P1", text=LOOK_ALIKE)
    checked = Utterance(id=1, speaker="P1", text=LOOK_ALIKE, names_unheard=("Anna",))
    assert find(LOOK_ALIKE, ANNA).reference is Reference.addressed  # the garble matcher alone takes it
    assert find(LOOK_ALIKE, ANNA, unheard=checked.unheard).reference is Reference.absent
    assert detect(_meeting(heard), ANNA).scenario is Scenario.explicit_cue
    assert detect(_meeting(checked), ANNA).scenario is not Scenario.explicit_cue
    roster = Roster.of(_meeting(checked), (ANNA,))
    assert [a.label for a in named(LOOK_ALIKE, "P1", roster)] == ["P2"]
    assert named(LOOK_ALIKE, "P1", roster, checked.unheard) == []


def test_a_name_not_said_only_hides_that_person():
    text = "Eero, Anna, could you two sort it out?"
    roster = Roster.of(_meeting(Utterance(id=1, speaker="P1", text=text)), (ANNA,))
    assert [a.label for a in named(text, "P1", roster, frozenset({"eero"}))] == ["P2"]


def test_the_flag_travels_from_the_wire_to_the_decision_and_is_validated():
    wire = UtteranceIn(type="utterance", id=3, speaker="P1", text=LOOK_ALIKE, names_unheard=["Anna"])
    assert wire.utterance().names_unheard == ("Anna",)
    with pytest.raises(ValueError):
        UtteranceIn(type="utterance", id=3, speaker="P1", text="x", names_unheard=["Anna"] * 51)


def test_heard_text_is_the_text_and_keeps_its_names_once():
    heard = Heard("Could you go ahead?", ["Anna", "Anna"])
    assert heard == "Could you go ahead?" and heard.unheard == ("Anna",)
    assert Heard("Okay.").unheard == ()


def test_every_checked_final_says_the_principals_name_or_that_it_was_not_said():
    """Real speech with nobody named, streamed with a principal: each final that asks something ("you") was
    checked, so it either has the name (written in, the audio supporting it) or carries it as not said."""
    model = load_speech_model()
    clip = next(c for c in load_clips(REAL_SPEECH) if c.name.startswith("jfk"))
    stream = StreamingTranscriber(model, names=["Anna Schmidt", "Dana Smith"], partial_every_s=3600.0)
    pcm = read_audio(clip.path)
    events = [e for e in stream.feed(pcm) + stream.flush() if e.final]
    asking = [e for e in events if " you" in f" {e.text.casefold()}"]
    assert asking, [e.text for e in events]
    for e in asking:
        assert "anna" not in e.text.casefold(), "nobody is named in the clip"
        assert e.names_unheard in ((), ("Anna",)), e
    assert len(pcm) / 2 / SAMPLE_RATE > 5 and np.isfinite(len(events))


def test_only_a_clear_loss_says_a_name_was_not_said():
    assert not_said(-10.0, [-20.0, -16.0])
    assert not not_said(-10.0, [-14.0, -12.0]), "the readings lost, but by too little to say the name was not there"
    assert not not_said(-10.0, [])

