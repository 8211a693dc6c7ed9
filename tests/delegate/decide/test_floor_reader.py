"""The floor reader's shipped run time (numpy, no torch): what it reads, and that it reads it as a listener would."""

from importlib import resources

from delegate.decide import floor_reader
from delegate.decide.floor_reader import CLS, MAX_PIECES, SEP, Turn, encode, pieces, reading
from delegate.decide.turn_taking import TextStack, TreeArrays, TurnTakingModel, addressing, floor, shipped
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Utterance

NAMES = {"P1": "Dana Smith", "P2": "Priya Raman", "P3": "Tomasz Kowalski", "P4": "Amara Okafor"}
PRIYA = Profile(name="Priya Raman", label="P2", background=[
    BackgroundItem(context="", information="The reviewers accepted our paper with minor revisions."),
    BackgroundItem(context="", information="The build server moves to the new rack on Monday."),
])


def meeting(rows: list[tuple[str, str]]) -> MeetingState:
    s = MeetingState("m", attendees=list(NAMES), names=NAMES)
    for i, (who, text) in enumerate(rows):
        s.add(Utterance(id=i, speaker=who, text=text))
    return s


def words(ids: list[int]) -> str:
    return floor_reader._tokenizer().decode(ids, skip_special_tokens=False)


def test_a_reading_tags_the_candidate_and_keeps_the_end_of_the_latest_turn():
    s = meeting([
        ("P2", "I looked at the reviews yesterday."),
        ("P3", "Right."),  # a backchannel: not a turn of the reading
        ("P3", "So " + "we went through every comment in detail and " * 12 + "what did the reviewers decide in the end?"),
    ])
    ids = reading(s, PRIYA)
    text = words(ids)
    assert ids[0] == CLS and ids[-1] == SEP and len(ids) <= MAX_PIECES
    assert "me : i looked at the reviews yesterday" in text  # her own last words, tagged as hers
    assert "a : i looked" not in text and "a : so we went" in text  # the other speaker has a letter
    assert text.removesuffix(" [SEP]").endswith("what did the reviewers decide in the end?")  # a long turn keeps its close
    assert "reviewers accepted our paper" in text  # the brief item that shares the talk's words


def test_nothing_is_cut_from_the_end_however_long_the_parts():
    long = "word " * 300
    ids = encode([Turn("A", long), Turn("B", long), Turn("A", long + "are you done?")], "C", long, long)
    assert len(ids) <= MAX_PIECES and ids[-1] == SEP
    assert ids[-1 - len(pieces("are you done?")) : -1] == list(pieces("are you done?"))


def test_the_weights_ship_in_the_package_at_int8():
    data = resources.files("delegate.weights").joinpath("floor_reader", floor_reader.WEIGHTS_FILE)
    assert data.is_file() and len(data.read_bytes()) < 8_000_000
    model = shipped()
    assert model.text is not None and 0 < model.text.gate[0] < model.text.gate[1] < 1


def test_the_principal_asked_back_reads_as_their_floor_more_than_a_talk_between_others():
    asked = meeting([
        ("P2", "I read the reviews last night, and most comments are about the evaluation."),
        ("P3", "Interesting. So what do you think we should change first?"),
    ])
    others = meeting([
        ("P3", "The build server moves to the new rack on Monday."),
        ("P4", "Good. Then I will restart the nightly jobs after the move, and check the logs."),
    ])
    z = floor_reader.shipped().log_odds([reading(asked, PRIYA), reading(others, PRIYA)])
    assert z[0] > z[1]


def _cheap_half() -> TurnTakingModel:
    flat = TreeArrays(feature=[-1], threshold=[0.0], left=[0], right=[0], value=[0.0])  # always 0.5
    return TurnTakingModel(features=list(shipped().features), trees=[flat], threshold=0.5, trained_on={})


def test_the_floor_reader_decides_inside_its_gate_only_and_can_be_switched_off():
    s = meeting([("P2", "I read the reviews."), ("P3", "So what do you think we should change first?")])
    addr = addressing(s, PRIYA)
    zt = float(floor_reader.shipped().log_odds([reading(s, PRIYA)])[0])
    stack = TextStack(cheap=1.0, text=1.0, bias=0.0, threshold=0.5, gate=(0.4, 0.6))
    inside = floor(s, PRIYA, addr, _cheap_half().model_copy(update={"text": stack}))
    assert inside.read and inside.taken == (zt >= 0)
    outside = floor(s, PRIYA, addr, _cheap_half().model_copy(update={"text": stack.model_copy(update={"gate": (0.6, 0.9)})}))
    assert not outside.read and outside.probability == 0.5
    off = floor(s, PRIYA, addr, _cheap_half().model_copy(update={"text": stack}), read=False)
    assert not off.read and off.probability == 0.5
    # Without `text` (DELEGATE_FLOOR_TEXT off, the default) the stack is left alone: weights without an encoder
    # reader then leave the moment to the cheap model.
    assert floor(s, PRIYA, addr, _cheap_half().model_copy(update={"text": stack}), text=False).probability == 0.5


def test_the_setting_switches_the_reading_models_off(monkeypatch):
    from delegate.config import Settings
    from delegate.decide import build_engine

    engine = build_engine("local", Settings())
    assert engine.read is True and engine.text is False  # the text model ships switched off (docs/turn-taking.md)
    monkeypatch.setenv("DELEGATE_FLOOR_READER", "off")
    monkeypatch.setenv("DELEGATE_FLOOR_TEXT", "on")
    engine = build_engine("local", Settings())
    assert engine.read is False and engine.text is True
