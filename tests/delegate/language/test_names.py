from delegate.language.names import Reference, find, sounds_like
from delegate.models import Profile

SIRUI = Profile(name="Sirui Zhao", label="PERSON5", aliases=["Sirui"])
JISEN = Profile(name="Jisen Li", label="PERSON2")


def ref(text: str, person: Profile = SIRUI, others: frozenset[str] = frozenset()) -> Reference:
    return find(text, person, others).reference


def test_vocative_mask_at_start_and_end():
    assert ref("[PERSON5], what is your status?") is Reference.addressed
    assert ref("That is settled, right, [PERSON5]?") is Reference.addressed
    assert ref("So [PERSON5] can you share how you downloaded it?") is Reference.addressed


def test_mention_is_not_address():
    assert ref("as [PERSON5] said, the data is fine") is Reference.mentioned
    assert ref("We talked with Sirui yesterday about it.") is Reference.mentioned
    assert ref("[PERSON5] said it would be ready.") is Reference.mentioned
    assert ref("I read [PERSON5]'s mail.") is Reference.mentioned


def test_handover_forms_address():
    assert ref("So now let's move to [PERSON5].") is Reference.addressed
    assert ref("And what about [PERSON5]?") is Reference.addressed


def test_absent():
    assert ref("Let's look at the budget for next year.") is Reference.absent


def test_full_name_first_name_and_initials():
    assert find("Sirui Zhao, could you start?", SIRUI).form == "name"
    assert ref("Sirui, could you give us an update?") is Reference.addressed
    assert find("SZ, your view?", SIRUI).form == "initials"


def test_garbled_names_in_vocative_slot():
    hit = find("Three, could you give us an update on the data collection?", SIRUI)
    assert hit.reference is Reference.addressed and hit.form == "garbled"
    assert ref("Siri, are you there?") is Reference.addressed
    assert ref("Jason, what do you think?", JISEN) is Reference.addressed


def test_garbled_name_capitalised_mid_sentence():
    assert find("So if Jesen will write it, fine?", JISEN).form == "garbled"


def test_ordinary_words_are_not_garbled_names():
    assert ref("Sorry, could you repeat that?") is Reference.absent
    assert ref("Well, could you repeat that?") is Reference.absent
    assert ref("I have three things, could you wait") is Reference.absent


def test_another_attendees_real_name_is_not_a_garble():
    # "Jason" is someone else in this meeting: it names him, not a garbled Jisen.
    assert ref("Jason, what do you think?", JISEN, frozenset({"jason"})) is Reference.absent


def test_sounds_like_orders_plausible_confusions():
    assert sounds_like("siri", "sirui") > sounds_like("cherry", "sirui")
    assert sounds_like("jason", "jisen") > 0.85
    assert sounds_like("budget", "jisen") < 0.6


def test_named_in_passing_is_between_address_and_mention():
    assert ref("Let me check; maybe [PERSON5] also knows, none of them works well.") is Reference.named
    assert ref("[PERSON2] and [PERSON5], we are going to work on the set-up.") is Reference.addressed


def test_names_beyond_ascii():
    jurgen = Profile(name="Jürgen Weiß", label="P7")
    assert ref("Jürgen, what is the budget?", jurgen) is Reference.addressed
    assert find("Jürgen, what is the budget?", jurgen).surface == "Jürgen"
    assert ref("Łukasz, your view?", Profile(name="Łukasz Nowak")) is Reference.addressed
    assert ref("李明, what is the budget?", Profile(name="李明")) is Reference.addressed
    # A recogniser that drops the umlaut still names him.
    assert ref("Jurgen, what is the budget?", jurgen) is Reference.addressed


def test_name_split_into_words_in_a_vocative_slot():
    cormac = Profile(name="Cormac Byrne")
    hit = find("Thanks, go Mac, are you there?", cormac)
    assert hit.reference is Reference.addressed and hit.surface == "go Mac"
    assert ref("Is that right, go Mac?", cormac) is Reference.addressed
    # The same words inside a clause are not a name.
    assert ref("We should go Mac only for the demo.", cormac) is Reference.absent
    # A run opened by a word that fills the slot on its own is not one either.
    assert ref("You know, it is fine.", Profile(name="Yuki Sato")) is Reference.absent
    assert ref("Budget, could you check it?", Profile(name="Siobhan Byrne")) is Reference.absent


def test_forms_of_address_are_not_garbled_names():
    shira = Profile(name="Shira Cohen")
    assert ref("Thank you, Chair.", shira) is Reference.absent
    assert ref("Mr. Chair, the question is simple.", shira) is Reference.absent
