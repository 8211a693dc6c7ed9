import difflib
import re

from benchmark.scoring.data import load
from benchmark.scoring.variants import derive, engaged_negatives
from delegate.meeting import is_backchannel


def test_deterministic_for_a_seed():
    m = load()[0]
    assert derive(m, 7) == derive(m, 7)
    assert derive(m, 7) != derive(m, 8)


def test_mismatched_principal_not_in_the_exchange():
    for m in load():
        for c in derive(m, 0):
            if c.variant != "mismatched" or c.scenario.value == "none":
                continue
            i = c.last_utterance
            recent = [u.speaker for u in m.utterances[max(0, i - 7) : i + 1] if not is_backchannel(u.text)]
            assert c.principal not in recent
            assert f"[{c.principal}]" not in m.utterances[i].text
            first = m.names.get(c.principal, c.principal).split()[0]
            assert not re.search(rf"\b{re.escape(first)}\b", m.utterances[i].text)
            assert all(u.speaker != c.principal for u in m.utterances[i + 1 : i + 5])


def test_noisy_name_changes_only_the_name():
    seen = 0
    for m in load():
        for c in derive(m, 0):
            if c.variant != "noisy_name":
                continue
            seen += 1
            original = m.utterances[c.last_utterance].text
            edited = c.edits[c.last_utterance]
            assert edited != original
            names = c.names or m.names
            display = names.get(c.principal, c.principal)
            assert display.split()[0] not in edited and f"[{c.principal}]" not in edited
            # Outside names, the words are the same (a garble may be several words, "She won").
            ops = difflib.SequenceMatcher(a=original.split(), b=edited.split(), autojunk=False).get_opcodes()
            for tag, i1, i2, _, _ in ops:
                if tag != "equal":
                    assert all(re.match(r"\[[A-Z]+\d+\]|[A-Z]", w) for w in original.split()[i1:i2])
    assert seen > 0


def test_engaged_negatives_have_the_principal_recently_but_not_next():
    for m in load():
        for c in engaged_negatives(m, 0):
            i = c.last_utterance
            assert c.principal in [u.speaker for u in m.utterances[max(0, i - 4) : i]]
            assert all(u.speaker != c.principal for u in m.utterances[i + 1 : i + 5])
            assert m.utterances[i].speaker != c.principal
