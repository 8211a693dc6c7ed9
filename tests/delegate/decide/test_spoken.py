from delegate.decide.reply.spoken import finished, first_person, spoken, unmask


def test_subjectless_notes_are_spoken_in_the_first_person():
    assert first_person("Has a visa appointment this Friday") == "I have a visa appointment this Friday"
    assert first_person("Needs the logs by Monday.") == "I need the logs by Monday."
    assert first_person("Is out next week.") == "I am out next week."


def test_sentences_with_a_subject_or_questions_stay_as_they_are():
    assert first_person("Has anyone seen the logs?") == "Has anyone seen the logs?"
    assert first_person("Is it ready") == "Is it ready"
    assert first_person("The data collection is on track") == "The data collection is on track"
    assert first_person("Hasan will present") == "Hasan will present"


def test_every_sentence_ends_as_a_sentence():
    assert finished("transcription starts next week") == "transcription starts next week."
    assert finished("it is running now;") == "it is running now."
    assert finished("Done!") == "Done!"


def test_masks_become_names():
    assert unmask("Send it to [PERSON3] and [PERSON4].", {"PERSON3": "Sirui Zhao"}) == "Send it to Sirui Zhao and PERSON4."


def test_a_reply_keeps_semicolons_and_separates_items():
    reply = spoken(
        ["The data collection is on track: two hundred recordings are in;", "transcription starts next week", "Has a visa appointment this Friday"],
        {},
    )
    assert reply == (
        "The data collection is on track: two hundred recordings are in; transcription starts next week. "
        "I have a visa appointment this Friday."
    )
