from benchmark.scoring.speech_checks import check
from delegate.models import BackgroundItem, Profile

SIRUI = Profile(
    name="Sirui Zhao",
    label="P2",
    aliases=["Sirui"],
    background=[
        BackgroundItem(context="if asked about the data collection", information="The data collection is on track: two hundred recordings are in."),
        BackgroundItem(context="if asked about travel", information="I have a visa appointment this Friday."),
    ],
)
TALK = "Sirui, how is the data collection going? Are the recordings in?"


def test_a_good_reply_passes_every_check():
    c = check("The data collection is on track: two hundred recordings are in.", SIRUI, [0], TALK)
    assert c.first_person and c.punctuated and c.unmasked and not c.joined_unrelated


def test_the_faults_heard_on_the_shipped_audio_are_caught():
    said = "The data collection is on track transcription starts next week Has a visa appointment this Friday"
    c = check(said, SIRUI, [0, 1], TALK)
    assert not c.first_person
    assert not c.punctuated
    assert c.joined_unrelated


def test_masks_and_third_person_self_reference_are_caught():
    assert not check("Give [PERSON3] an update.", SIRUI, [], TALK).unmasked
    assert not check("Sirui thinks the data is fine.", SIRUI, [], TALK).first_person
