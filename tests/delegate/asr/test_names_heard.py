"""Names checked against the audio: the readings tried, the choice, and the real recogniser on real audio."""

from __future__ import annotations

import shutil

import pytest

from benchmark.asr import REAL_SPEECH, load_clips
from delegate.asr.names_heard import MIN_GAIN, best_reading, name_readings, names_to_check


def test_the_name_checked_is_the_principals_first_name_the_prompt_opens_with() -> None:
    assert names_to_check("Sirui Zhao, Peter, Anna") == ["Sirui"]
    assert names_to_check("Anna, Peter") == ["Anna"]
    assert names_to_check(None) == []


def test_readings_put_the_name_where_people_are_called_over_the_words_it_may_have_become() -> None:
    readings = name_readings("Okay, Siri we, how is the data collection going?", ["Sirui"])
    assert "Okay, Sirui, how is the data collection going?" in readings  # two words were the name
    assert "Okay, Sirui, Siri we, how is the data collection going?" in readings  # the name dropped
    assert not any("Okay, Sirui, going?" in r for r in readings)  # at most MAX_HIDDEN_WORDS hidden
    closing = name_readings("Is that right, and you?", ["Anna"])
    assert "Is that right, Anna?" in closing
    assert all(r.count("Sirui") == 1 for r in readings)


def test_no_readings_when_the_name_is_already_there_or_nothing_was_heard() -> None:
    assert name_readings("Anna, what do you think?", ["Anna"]) == []
    assert name_readings("", ["Anna"]) == []


def test_a_reading_is_kept_only_when_the_audio_supports_it_at_least_as_well() -> None:
    assert best_reading(-10.0, ["a", "b"], [-12.0, -10.0 + MIN_GAIN]) == "b"
    assert best_reading(-10.0, ["a", "b"], [-12.0, -10.5 + MIN_GAIN]) is None
    assert best_reading(-10.0, [], []) is None


@pytest.fixture(scope="module")
def model():
    pytest.importorskip("faster_whisper")
    from delegate.asr.whisper import load_speech_model

    return load_speech_model()


# Tune-half cues of benchmark.names (never held-out ones) whose name tiny.en, biased, garbled on a development
# machine ("Bikes King, Yon", "secure it", "YO"): which of them a processor's int8 kernels garble, and how,
# differs between machines, so the test counts over all of them, as a listener would.
GARBLED_CUES = (
    ("Thanks. {name}, are you there?", "Qingyun", ("Qingyun", "Aoife", "Eitan"), "en-029+f4", 135),
    ("Thanks. {name}, are you there?", "Sakura", ("Sakura", "Hodan", "Femke"), "en-gb+f4", 185),
    ("{name}, could you tell us about the budget?", "Despina", ("Despina", "Fernanda", "Folake"), "en-gb", 135),
    ("{name}, could you tell us about the budget?", "Ifeoma", ("Ifeoma", "Vladimir", "Aarav"), "en-gb-scotland", 160),
    ("{name}, what do you think?", "Yaw", ("Yaw", "Shira", "Sakura"), "en-gb-x-rp+f2", 135),
    ("{name}, could you tell us about the budget?", "Babak", ("Babak", "Mahsa", "Murugan"), "en-029+m3", 185),
    ("{name}, what do you think?", "Eitan", ("Eitan", "Matteo", "Saoirse"), "en-gb-x-rp", 135),
    ("{name}, can you give us an update on the testing?", "Huong", ("Huong", "Parisa", "Ylva"), "en-us-nyc+f4", 135),
)


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng")
def test_garbled_names_are_recovered_from_the_audio(model) -> None:
    from benchmark.garbles import synthesise
    from benchmark.names.__main__ import addressed, finals

    heard = {False: 0, True: 0}
    for template, name, attendees, voice, speed in GARBLED_CUES:
        pcm = synthesise(template.format(name=name), voice, speed)
        texts = {check: " ".join(finals(model, pcm, attendees, check=check)) for check in (False, True)}
        for check, text in texts.items():
            heard[check] += addressed(text, name, attendees)
        # The check puts the principal's name in, never another attendee's.
        for other in attendees[1:]:
            assert addressed(texts[False], other, attendees) or not addressed(texts[True], other, attendees), texts
        # A name heard without the check is still heard with it.
        assert addressed(texts[True], name, attendees) or not addressed(texts[False], name, attendees), texts
    # With the check a listener hears the name in most of these cues, and in more than without it.
    assert heard[True] >= 5 and heard[True] > heard[False], heard


def test_real_speech_where_nobody_is_named_gains_no_name(model) -> None:
    from benchmark.names.__main__ import finals
    from delegate.asr.whisper import read_audio

    attendees = ("Anna", "Abbie", "Peter")
    for clip in load_clips(REAL_SPEECH):
        if clip.name in ("harvard_list72", "jfk_inaugural"):
            for text in finals(model, read_audio(clip.path), attendees, check=True):
                assert not any(n.casefold() in text.casefold() for n in attendees), text
