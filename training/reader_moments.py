"""Moments for careful readers to judge: "should this person speak now?", chosen where a label teaches most.

Every substantive turn of a training meeting is a moment for each of its candidates (the rows of
`training.turn_dataset`). The shipped model's probability and what the candidate really did place each in a
pool: the model unsure, its false speaks, a question right after the candidate spoke, a chime-in it missed,
and a few plain ones. Moments are drawn from the pools by quota, spread over meetings, and dealt into
packets that never hold two moments of one meeting (a reader who saw a meeting once would read its next
moment with hindsight); a share of moments goes to two packets, for agreement.

A packet shows what the delegate would see: the candidate's brief and the last turns, never what came next.
Packets quote the corpora, so they are written outside the repository; the key (ids, pools, the model's
probability, the next-speaker label) and the readers' labels are what is kept.
"""

from __future__ import annotations

import json
import random
import zlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from delegate.addressing import person
from delegate.decide.turn_taking import addressing, features, is_question, references, shipped
from delegate.meeting import MeetingState, is_backchannel
from delegate.models import Profile
from training.briefs import briefs
from training.corpora import TrainingMeeting
from training.turn_dataset import candidates, next_speakers

TURNS_SHOWN = 10
EARLIER_CHARS = 320
LAST_CHARS = 700
POOLS = {"unsure": 0.32, "false_speak": 0.22, "question_after_spoke": 0.16, "chime_in_missed": 0.16, "plain": 0.14}
PER_MEETING = 14
"""At most this many moments of one meeting, so that the labels are not one meeting's habits."""

ASKS = ("question", "yes_no", "request", "presence", "thanks", "invitation", "opinion", "sensitive", "chime_in", "none")
"""What the latest turn asks of the principal (the reply issue's kinds); `chime_in`: nothing asked, but the talk
reached what they know; `none`: nothing for them."""


@dataclass(frozen=True)
class Moment:
    moment: str
    meeting_id: str
    corpus: str
    utterance: int
    """Index of the latest turn in the meeting's utterances: the moment is right after it."""
    candidate: str
    pool: str
    p: float
    """The shipped cheap model's probability that the floor is the candidate's."""
    y: int
    """Whether the candidate really took the next substantive turn."""


@dataclass(frozen=True)
class Seen:
    """One candidate right after one turn, as the delegate would see it."""

    index: int
    state: MeetingState
    candidate: str
    profile: Profile
    features: list[float]
    y: int


def walk(meeting: TrainingMeeting, seed: int = 0) -> Iterator[Seen]:
    """Every candidate after every substantive turn, with the brief `training.briefs` makes and the model's features
    (the loop of `turn_dataset.meeting_rows`, keeping which moment each row is). The state is shared: read it at once."""
    state = MeetingState(meeting.meeting_id, attendees=list(meeting.attendees), names=dict(meeting.names))
    rng = random.Random(seed * 1_000_003 + zlib.crc32(meeting.meeting_id.encode()))
    profiles = briefs(meeting.attendees, meeting.names, meeting.utterances, meeting.meeting_id, meeting.profiles, seed)
    nxt = next_speakers(meeting)
    for i, u in enumerate(meeting.utterances):
        state.add(u)
        if is_backchannel(u.text) or nxt[i] is None:
            continue
        refs = references(state)
        for label in candidates(state, set(refs), rng):
            who = profiles.get(label) or person(label, state.display_name(label))
            x = features(state, who, addressing(state, who, refs, garbles=label in meeting.profiles))
            yield Seen(i, state, label, who, x, int(nxt[i] == label))


def _pool(seen: Seen, p: float, threshold: float) -> str | None:
    me = seen.candidate
    last = seen.state.last
    assert last is not None
    spoke_recently = me in seen.state.recent_speakers(3)
    if p >= threshold and not seen.y:
        return "false_speak"
    if abs(p - threshold) <= 0.12:
        return "unsure"
    if is_question(last.text) and spoke_recently:
        return "question_after_spoke"
    if seen.y and p < threshold and not spoke_recently:
        return "chime_in_missed"
    return "plain"


def candidates_of(meeting: TrainingMeeting, seed: int = 0, principals_only: bool = False) -> list[Moment]:
    """Every moment of a meeting that could be given to a reader, each in its pool; with `principals_only`, only the
    candidates the meeting has a written brief for (a benchmark's principals)."""
    model = shipped()
    out = []
    for seen in walk(meeting, seed):
        if not (seen.profile.background or seen.profile.intents):
            continue  # nothing to read against: a reader could not judge a chime-in
        if principals_only and seen.candidate not in meeting.profiles:
            continue
        p = model.probability(seen.features)
        pool = _pool(seen, p, model.threshold)
        if pool is None:
            continue
        out.append(Moment("", meeting.meeting_id, meeting.corpus, seen.index, seen.candidate, pool, round(p, 4), seen.y))
    return out


def choose(
    pools_by_meeting: dict[str, list[Moment]], total: int, seed: int, per_meeting_cap: int = PER_MEETING,
    taken_before: set[tuple[str, int, str]] | None = None, first_id: int = 1,
) -> list[Moment]:
    """`total` moments by the pools' quotas, round-robin over meetings, at most `per_meeting_cap` of one meeting, none
    of `taken_before` (an earlier round's); ids from `first_id` on."""
    rng = random.Random(seed)
    per_meeting: dict[str, int] = defaultdict(int)
    taken: set[tuple[str, int, str]] = set(taken_before or ())
    chosen: list[Moment] = []
    for pool, share in POOLS.items():
        want = round(total * share)
        queues = {m: [x for x in ms if x.pool == pool] for m, ms in pools_by_meeting.items()}
        for q in queues.values():
            rng.shuffle(q)
        order = sorted(queues)
        rng.shuffle(order)
        got = 0
        while got < want and any(queues[m] for m in order):
            for m in order:
                if got >= want:
                    break
                while queues[m]:
                    x = queues[m].pop()
                    key = (x.meeting_id, x.utterance, x.candidate)
                    if key in taken or per_meeting[m] >= per_meeting_cap:
                        continue
                    taken.add(key)
                    per_meeting[m] += 1
                    chosen.append(x)
                    got += 1
                    break
    rng.shuffle(chosen)
    return [Moment(f"M{i + first_id:04d}", *list(asdict(x).values())[1:]) for i, x in enumerate(chosen)]


def deal(chosen: list[Moment], packets: int, double: float, seed: int) -> list[list[Moment]]:
    """Each moment to one packet (a `double` share to two), never two moments of a meeting in one packet."""
    rng = random.Random(seed + 1)
    twice = set(rng.sample([m.moment for m in chosen], round(len(chosen) * double)))
    dealt: list[list[Moment]] = [[] for _ in range(packets)]
    meetings: list[set[str]] = [set() for _ in range(packets)]
    by_meeting: dict[str, list[Moment]] = defaultdict(list)
    for m in chosen:
        by_meeting[m.meeting_id].append(m)
    # The busiest meetings first, each moment to the emptiest packets that do not hold its meeting yet.
    for group in sorted(by_meeting.values(), key=len, reverse=True):
        for m in group:
            copies = 2 if m.moment in twice else 1
            free = sorted((k for k in range(packets) if m.meeting_id not in meetings[k]), key=lambda k: (len(dealt[k]), rng.random()))
            for k in free[:copies]:
                dealt[k].append(m)
                meetings[k].add(m.meeting_id)
    for d in dealt:
        rng.shuffle(d)
    return dealt


def deal_in_order(chosen: list[Moment], meetings_per_packet: int, double: float, seed: int) -> list[list[Moment]]:
    """Whole meetings to a packet, their moments in the meeting's order: a reader labels each before reading on, so a
    later moment (which shows what followed an earlier one) never colours the earlier label. A `double` share of
    the moments is also put at the end of another packet, alone of its meeting there."""
    rng = random.Random(seed + 2)
    by_meeting: dict[str, list[Moment]] = defaultdict(list)
    for m in chosen:
        by_meeting[m.meeting_id].append(m)
    order = sorted(by_meeting)
    rng.shuffle(order)
    groups = [order[i: i + meetings_per_packet] for i in range(0, len(order), meetings_per_packet)]
    dealt = [[x for mid in g for x in sorted(by_meeting[mid], key=lambda x: (x.utterance, x.candidate))] for g in groups]
    for m in rng.sample(chosen, round(len(chosen) * double)):
        others = [k for k, g in enumerate(groups) if m.meeting_id not in g and all(x.meeting_id != m.meeting_id for x in dealt[k])]
        if others:
            dealt[rng.choice(others)].append(m)
    return dealt


def _clip(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    half = chars // 2
    return f"{text[:half].rstrip()} … {text[-half:].lstrip()}"


def render(moment: Moment, meeting: TrainingMeeting, profile: Profile, kind: str) -> str:
    """One moment as a reader sees it: who they are, their brief, the last turns; nothing after."""
    names = dict(meeting.names)
    shown = meeting.utterances[max(0, moment.utterance + 1 - TURNS_SHOWN): moment.utterance + 1]
    me = names.get(moment.candidate, moment.candidate)
    lines = [f"## {moment.moment}", f"You are **{me}** in {kind}. Attendees: {len(meeting.attendees)}."]
    if profile.intents:
        lines.append("Wants to learn or raise:")
        lines += [f"- {t}" for t in profile.intents]
    items = [b for b in profile.background if b.shareable]
    if items:
        lines.append("Knows (brief items):")
        lines += [f"[{n}] {(b.context + ': ') if b.context else ''}{b.information}" for n, b in enumerate(items, 1)]
    lines.append("Last turns (the last one was just said):")
    for u in shown:
        who = names.get(u.speaker, u.speaker)
        who = f"{who} (you)" if u.speaker == moment.candidate else who
        last = u is shown[-1]
        lines.append(f"{'>>> ' if last else ''}{who}: {_clip(u.text, LAST_CHARS if last else EARLIER_CHARS)}")
    return "\n".join(lines)


KINDS = {
    "ami": "a product-design team meeting (AMI; speakers are labelled, never named aloud)",
    "icsi": "a research group's meeting (ICSI; speakers are labelled, never named aloud)",
    "committee": "a parliamentary committee hearing",
    "elitr": "a project meeting (ELITR)",
}


def write(meetings: list[TrainingMeeting], chosen: list[Moment], dealt: list[list[Moment]], out: Path, seed: int = 0) -> None:
    out.mkdir(parents=True, exist_ok=True)
    by_id = {m.meeting_id: m for m in meetings}
    profiles = {
        m.meeting_id: briefs(m.attendees, m.names, m.utterances, m.meeting_id, m.profiles, seed) for m in meetings if m.meeting_id in {c.meeting_id for c in chosen}
    }
    packet_of: dict[str, list[int]] = defaultdict(list)
    for k, packet in enumerate(dealt, 1):
        body = [_render_one(x, by_id, profiles) for x in packet]
        (out / f"packet_{k:02d}.md").write_text(f"# Packet {k:02d}: {len(packet)} moments\n\n" + "\n\n".join(body) + "\n", encoding="utf-8")
        for x in packet:
            packet_of[x.moment].append(k)
    with (out / "key.jsonl").open("w", encoding="utf-8") as f:
        for x in chosen:
            f.write(json.dumps({**asdict(x), "packets": packet_of[x.moment]}) + "\n")


def _render_one(x: Moment, by_id: dict[str, TrainingMeeting], profiles: dict[str, dict[str, Profile]]) -> str:
    meeting = by_id[x.meeting_id]
    return render(x, meeting, profiles[x.meeting_id][x.candidate], KINDS.get(meeting.corpus, "a meeting"))
