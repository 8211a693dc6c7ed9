from benchmark.scoring.data import FIXTURES
from delegate.language.text import content_words
from training.briefs import ITEM_WORDS, ITEMS, MIN_CONTENT_WORDS, brief, briefs
from training.corpora import bench_meetings


def test_a_made_brief_holds_openings_of_the_persons_own_substantive_turns_and_their_questions():
    m = bench_meetings(FIXTURES, "fixture")[0]
    label = max(m.attendees, key=lambda a: sum(u.speaker == a for u in m.utterances))
    b = brief(label, m.names.get(label, label), m.utterances, m.meeting_id)
    own = [u.text for u in m.utterances if u.speaker == label]
    assert 0 < len(b.background) <= ITEMS and b.speaker_label == label
    for item in b.background:
        assert len(item.information.split()) <= ITEM_WORDS and item.context == ""
        assert any(t.startswith(item.information) for t in own)
        assert len(content_words(item.information)) >= min(MIN_CONTENT_WORDS, 1)
    assert all(any(t.startswith(intent) for t in own) for intent in b.intents)


def test_briefs_are_seeded_and_keep_the_benchmarks_own_profiles():
    m = bench_meetings(FIXTURES, "fixture")[0]
    first = briefs(m.attendees, m.names, m.utterances, m.meeting_id, m.profiles, seed=0)
    again = briefs(m.attendees, m.names, m.utterances, m.meeting_id, m.profiles, seed=0)
    assert first == again and set(first) == set(m.attendees)
    for label, profile in m.profiles.items():
        assert first[label] is profile
