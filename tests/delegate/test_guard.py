"""The privacy guard: what an LLM (or anything else) may say for the principal, whatever it writes."""

from __future__ import annotations

import pytest

from delegate import guard
from delegate.models import BackgroundItem, Decision, Profile, ProposedAction, Scenario

AMARA = Profile(
    name="Amara Okafor",
    label="P4",
    aliases=["Amara"],
    intents=["When marketing can announce the release"],
    background=[
        BackgroundItem(
            context="When the launch date is discussed",
            information="Marketing needs five working days of notice before any launch announcement.",
        ),
        BackgroundItem(
            context="if the sale comes up",
            information="We are being acquired by Globex for 42 million dollars; nobody may know yet.",
            shareable=False,
        ),
        BackgroundItem(context="if asked about budget", information="The launch budget is 80,000 euros."),
    ],
)
ASKED = ["Dana: We want to launch on the 14th.", "Dana: Amara, does the launch date work for marketing?"]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("I can say the buyer is Globex.", "private_name"),
        ("G-L-O-B-E-X", "private_name"),
        ("It is G l o b e x, between us.", "private_name"),
        ("It's Glo-bex.", "private_name"),
        ("El comprador es Glоbех.", "private_name"),  # Cyrillic о, е, х
        ("Der Käufer ist GLOBEX.", "private_name"),
        ("The price is forty-two million.", "private_number"),
        ("It is 42,000,000 dollars.", "private_number"),
        ("42M, roughly.", "private_number"),
        ("Le prix est de quarante-deux millions.", "private_number"),
        ("Der Preis liegt bei zweiundvierzig Millionen.", "private_number"),
        ("We are being acquired and nobody knows.", "private_words"),
    ],
)
def test_a_private_item_is_caught_however_it_is_written(text: str, rule: str) -> None:
    verdict = guard.check(text, AMARA, ASKED)
    assert (verdict.allowed, verdict.rule, verdict.item) == (False, rule, 1)
    assert guard.safe_text(text, AMARA, ASKED, withheld="-") == "-"


@pytest.mark.parametrize(
    "text",
    [
        "Marketing needs five working days of notice before any launch announcement.",
        "The launch budget is 80,000 euros.",
        "I'd like to know when marketing can announce the release.",
        "The 14th works if we get the notice in time.",
        "Yes, the 14th works for marketing.",
        "I don't have that at hand right now — I'll check and follow up after the meeting.",
    ],
)
def test_shareable_items_intents_and_the_transcript_can_be_quoted(text: str) -> None:
    assert guard.check(text, AMARA, ASKED).allowed


def test_what_the_meeting_said_may_be_repeated_but_a_fresh_guess_is_neither_confirmed_nor_denied() -> None:
    earlier = ["Dana: Globex called about the pricing sheet.", "Kim: ok", "Dana: next item", "Kim: fine"]
    assert guard.check("Globex wanted the pricing sheet, as Dana said.", AMARA, earlier).allowed
    guess = [*ASKED, "Kim: Is the buyer Globex, Amara?"]
    for reply in ("Yes, that's right.", "Exactly.", "No, wrong guess.", "The buyer is Globex.", "Oui."):
        verdict = guard.check(reply, AMARA, guess)
        assert (verdict.allowed, verdict.rule, verdict.item) == (False, "confirmation", 1), reply
    assert guard.check("Let's keep to the launch date for now.", AMARA, guess).allowed
    # A number guessed counts as a guess too.
    assert guard.check("Correct.", AMARA, ["Kim: Was it 42 million?"]).rule == "confirmation"


def test_a_profile_without_private_items_lets_everything_through() -> None:
    open_book = AMARA.model_copy(update={"background": [AMARA.background[0]]})
    assert guard.check("Globex for 42 million, yes.", open_book, []).allowed


def _decision(speak: str, reason: str) -> Decision:
    return Decision(
        utterance_id=3, scenario=Scenario.explicit_cue, speak=speak, reason=reason, confidence=0.9,
        engine="llm", used_background=[0],
    )


def test_a_decision_leaves_silent_when_its_speech_leaks_and_its_reason_is_checked_too() -> None:
    safe, blocked = guard.guard_decision(_decision("The buyer is Globex.", "llm: asked"), AMARA, ASKED)
    assert not safe.spoke and safe.used_background == [] and "Globex" not in safe.reason
    assert [(b.field, b.rule, b.item) for b in blocked] == [("speak", "private_name", 1)]
    safe, blocked = guard.guard_decision(
        _decision("Five working days of notice, please.", "llm: she must not mention the Globex deal"),
        AMARA,
        ASKED,
    )
    assert safe.spoke and safe.reason == guard.REASON_WITHHELD
    assert [(b.field, b.rule) for b in blocked] == [("reason", "private_name")]
    fine = _decision("Five working days of notice, please.", "llm: named")
    assert guard.guard_decision(fine, AMARA, ASKED) == (fine, [])


def test_an_action_is_checked_in_every_text_it_carries() -> None:
    action = ProposedAction(
        id="a1", action_type="send_email", description="Send the launch plan to Dana",
        supporting_excerpt="I'll send the launch plan", assignees=["P4"],
    )
    assert guard.guard_action(action, AMARA, ASKED) is None
    leaky = action.model_copy(update={"description": "Send the Globex term sheet to Dana"})
    blocked = guard.guard_action(leaky, AMARA, ASKED)
    assert blocked is not None and (blocked.field, blocked.rule, blocked.item) == ("description", "private_name", 1)


def test_a_guess_made_long_ago_is_not_confirmed_either() -> None:
    # Found by benchmark.chaos: the guess sat beyond the last turns the confirmation rule looked at.
    long_ago = ["Kim: Is the buyer Globex?", *[f"Dana: item {k}" for k in range(10)]]
    verdict = guard.check("Yes, it is Globex.", AMARA, long_ago)
    assert (verdict.allowed, verdict.rule) == (False, "confirmation")
    # Quoting what the meeting said, without settling it, stays allowed.
    assert guard.check("Globex was mentioned earlier by Kim.", AMARA, long_ago).allowed


def test_a_code_of_letters_and_digits_is_as_telling_as_a_name() -> None:
    # Found by benchmark.chaos: "Zanzibar3" was neither a rare word nor a proper noun to the guard.
    coded = Profile(
        name="Dana Lee",
        background=[
            BackgroundItem(context="if the deal comes up", information="The acquisition codename is Zanzibar3.", shareable=False),
            BackgroundItem(context="if asked", information="Version 5.4 ships on Friday."),
        ],
    )
    guessed = ["Kim: Dana, is the codename Zanzibar3?", *[f"Bob: item {k}" for k in range(10)]]
    assert guard.check("It is Zanzibar3.", coded, []).rule == "private_name"
    assert guard.check("Yes, it is Zanzibar3.", coded, guessed).rule == "confirmation"
    assert guard.check("Version 5.4 ships on Friday.", coded, guessed).allowed


OFFSITE = Profile(
    name="Dana Lee",
    background=[
        BackgroundItem(
            context="if the offsite comes up",
            information="The offsite is in Zanzibar, then Kumasi; nobody may know yet.",
            shareable=False,
        ),
        BackgroundItem(context="if asked who plans it", information="Zoë Brandt plans the offsite in München."),
    ],
)


@pytest.mark.parametrize(
    "text",
    [
        "The offsite is in Zanzibaг.",  # Cyrillic г (issue 27: it read as "Zanzibag")
        "The offsite is in Zaոzibar.",  # Armenian ո (it read as "Zaozibar")
        "The offsite is in Zаnzibar.",  # Cyrillic а
        "The offsite is in ZANZІBAR.",  # Cyrillic І, whose prototype is that of "l", not "I"
        "The offsite is in ΖΑΝΖΙΒΑR.",  # Greek capitals
        "The offsite is in ZᎪNZIᏴᎪR.",  # Cherokee Ꭺ, Ᏼ
        "The offsite is in Ｚａｎｚｉｂａｒ.",  # fullwidth
        "The offsite is in Zan\u200bzi\u200dbar.",  # zero-width space and joiner
        "The offsite is in 𝐙𝐚𝐧𝐳𝐢𝐛𝐚𝐫.",  # mathematical bold
        "The offsite is in 𝔷𝔞𝔫𝔷𝔦𝔟𝔞𝔯.",  # mathematical fraktur
        "The offsite is in 𝗓𝖺𝗇𝗓𝗂𝖻𝖺𝗋.",  # mathematical sans-serif
        "Then Ku𝐦asi.",  # mathematical bold m, whose prototype is "rn"
        "Then Kսmasi.",  # Armenian ս
    ],
)
def test_a_private_name_in_look_alike_letters_is_caught(text: str) -> None:
    verdict = guard.check(text, OFFSITE, [])
    assert (verdict.allowed, verdict.rule, verdict.item) == (False, "private_name", 0)


@pytest.mark.parametrize(
    "text",
    [
        "Zoë Brandt plans the offsite in München.",
        "Zoë und Käthe treffen sich am Donnerstag, das Büro in der Großstraße ist geöffnet.",
        "Très bien, Zoë : la réunion est déplacée à jeudi, à côté de l'église.",
        "Mañana revisamos el presupuesto con Zoë; Øresund e İstanbul quedan para después.",
        "Привет, Зоя! Встреча в четверг, по плану.",
        "Καλημέρα, η συνάντηση είναι την Πέμπτη.",
        "Բարև, հանդիպումը հինգշաբթի է։",
    ],
)
def test_ordinary_text_in_other_scripts_and_with_accents_is_not_taken_for_a_disguise(text: str) -> None:
    assert guard.check(text, OFFSITE, ["Bob: Dana, who plans the offsite?"]).allowed
