"""Who is who: a participant keeps one label for the meeting; the principal's list names them as they call them."""

from __future__ import annotations

from delegate.integrations.speakers import Roster


def test_a_participant_keeps_their_first_label_through_a_rename() -> None:
    roster = Roster(["Bob Jones"])
    assert roster.label("16778240", "Bob Jones") == "Bob Jones"
    assert roster.label("16778240", "Bob J. (away)") == "Bob Jones"
    assert roster.shown["16778240"] == "Bob J. (away)"


def test_service_names_are_matched_to_the_listed_attendees() -> None:
    roster = Roster(["Bob Jones", "Carol Diaz", "Carl Diaz"])
    assert roster.label("1", "Bob") == "Bob Jones"  # the one listed name that starts with it
    assert roster.label("2", "carol diaz (Guest)") == "Carol Diaz"  # the same words, extras dropped
    assert roster.label("3", "Diaz") == "Diaz"  # two listed names end with it: not guessed
    assert roster.label("4", "Dana Lee [External]") == "Dana Lee"  # not listed: as shown, extras dropped


def test_two_people_showing_one_name_stay_two_speakers() -> None:
    roster = Roster()
    assert roster.label("1", "Sam") == "Sam"
    assert roster.label("2", "Sam") == "Sam (2)"
    assert roster.label("1", None) == "Sam"


def test_a_nameless_participant_is_the_listed_one_not_yet_seen_only_when_just_one_is_left() -> None:
    roster = Roster(["Bob Jones", "Carol Diaz", "Dana Lee"])
    assert roster.label("9", None) == "Participant 1"  # three unseen: no guess
    roster.label("1", "Bob Jones")
    roster.label("2", "Dana")
    assert roster.label("7", None) == "Carol Diaz"
    assert roster.label("8", None) == "Participant 5"
    assert roster.labels == ["Participant 1", "Bob Jones", "Dana Lee", "Carol Diaz", "Participant 5"]


def test_the_bot_itself_is_known_by_its_name_and_then_by_its_id() -> None:
    roster = Roster(["Bob Jones"], own_name="Alice Smith (AI delegate)")
    assert roster.is_own("999", "Alice Smith (AI delegate)")
    assert roster.is_own("999", None) and not roster.is_own("100", "Bob Jones")
    assert not roster.is_own(None, "Alice Smith")  # the principal's own name is not the bot's
