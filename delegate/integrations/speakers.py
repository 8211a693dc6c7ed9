"""Who is who in a meeting a service reports: each participant id keeps one speaker label for the whole
meeting, whatever display name it shows later, and a name the principal listed is used as they listed it."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NOISE = re.compile(r"\(.*?\)|\[.*?\]")
"""What services and platforms add to a display name: "(Guest)", "(she/her)", "[External]"."""


def _words(name: str) -> tuple[str, ...]:
    return tuple(_NOISE.sub(" ", name).casefold().split())


class Roster:
    """Participant id -> speaker label. `listed`: the attendees the principal named for the meeting."""

    def __init__(self, listed: Iterable[str] = (), own_name: str | None = None) -> None:
        self.listed = [a for a in listed if a.strip()]
        self.own_name = own_name
        """The bot's own display name: its turns in a service's transcript are the delegate's voice heard back."""
        self._own_ids: set[str] = set()
        self._labels: dict[str, str] = {}
        self.shown: dict[str, str] = {}
        """Participant id -> the display name the service shows now (it may have changed)."""

    def is_own(self, participant_id: str | None, name: str | None) -> bool:
        """Whether this participant is the bot itself (by the name it was given; its id is remembered, so a
        service that later shows it without a name still tells)."""
        if name is not None and self.own_name is not None and name.strip() == self.own_name:
            if participant_id is not None:
                self._own_ids.add(participant_id)
            return True
        return participant_id is not None and participant_id in self._own_ids

    @property
    def labels(self) -> list[str]:
        """Every participant's label, in the order they were first seen."""
        return list(dict.fromkeys(self._labels.values()))

    def label(self, participant_id: str | None, name: str | None) -> str:
        """The label of this participant, given the first time it is seen and kept after (a rename, a
        late joiner whose name another turn already used). A participant with no id is known by name only."""
        name = (name or "").strip() or None
        if participant_id is None:
            return self._listed_as(name) if name else "unknown"
        if name:
            self.shown[participant_id] = name
        known = self._labels.get(participant_id)
        if known is not None:
            return known
        label = self._listed_as(name) if name else self._only_unseen()
        label = label or f"Participant {len(self._labels) + 1}"
        if label in self._labels.values():  # two people showing the same name stay two speakers
            label = f"{label} ({participant_id})"
        self._labels[participant_id] = label
        return label

    def _listed_as(self, name: str) -> str:
        """`name` as the principal listed it: the same words, a listed full name shown with extras, or the
        listed name that alone starts with it ("Bob" for "Bob Jones"); else the name as shown."""
        words = _words(name)
        for listed in self.listed:
            if _words(listed) == words:
                return listed
        containing = [x for x in self.listed if _words(x) and set(_words(x)) <= set(words)]
        if len(containing) == 1:
            return containing[0]
        starting = [x for x in self.listed if words and _words(x)[: len(words)] == words]
        if len(starting) == 1:
            return starting[0]
        return _NOISE.sub("", name).strip() or name

    def _only_unseen(self) -> str | None:
        """With no name, a listed attendee can only be told when exactly one of them has not been seen."""
        unseen = [a for a in self.listed if a not in self._labels.values()]
        return unseen[0] if len(unseen) == 1 else None
