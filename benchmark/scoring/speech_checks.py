"""Properties of what the delegate says, checked on every spoken response: does it sound like the principal?

- `first_person`: no sentence opens with a subjectless third-person note ("Has a visa appointment"),
  and the principal is not named as a third person.
- `punctuated`: the reply ends as a sentence ends (`.`, `!`, `?`, `…`).
- `unmasked`: no `[PERSON3]`-style mask brackets are spoken.
- `joined_unrelated`: the reply joins a background item that fits the talk much worse than its first
  item (by the judge's similarity to the last turns) — a second item that answers another question.
- `speakable` and `defects`: the speakable check (`delegate.speakable`: no address, URL, ticket key, field
  list, greeting or sign-off, header, bullets, at most 60 words and 4 sentences) and what it found.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from delegate.decide.reply.spoken import THIRD_PERSON_OPENERS
from delegate.language.similarity import similarity
from delegate.language.text import MASK
from delegate.models import Profile
from delegate.speakable import defects

# A capitalised word at a sentence start, or glued on after a lowercase word (a lost full stop).
_SENTENCE_START = re.compile(r"(?:^|(?<=[.!?;—])\s+|(?<=[a-z0-9,])\s+(?=[A-Z]))([A-Za-z']+)\s+(\S+)")
_FINAL = re.compile(r"[.!?…]['\")\]]*$")
UNRELATED_SHARE = 0.5
"""A later item whose fit to the talk is below this share of the first item's is unrelated."""


class SpeechChecks(BaseModel):
    model_config = ConfigDict(frozen=True)

    first_person: bool
    punctuated: bool
    unmasked: bool
    joined_unrelated: bool
    speakable: bool = True
    defects: tuple[str, ...] = ()


def _third_person_opener(response: str) -> bool:
    for m in _SENTENCE_START.finditer(response):
        head, nxt = m.group(1).lower(), m.group(2).lower()
        if head in THIRD_PERSON_OPENERS and m.group(1)[0].isupper() and nxt not in ("i", "you", "we", "it", "there"):
            return True
    return False


def _names_principal(response: str, principal: Profile) -> bool:
    forms = {principal.name, *principal.aliases, principal.speaker_label}
    words = {f for f in forms if f and len(f) > 2}
    return any(re.search(rf"(?<!\w)\[?{re.escape(f)}\]?(?!\w)", response) for f in words)


def check(response: str, principal: Profile, used_background: list[int], talk: str) -> SpeechChecks:
    fits = [
        similarity(talk, f"{principal.background[k].context} {principal.background[k].information}")
        for k in used_background
        if 0 <= k < len(principal.background)
    ]
    found = defects(response)
    unrelated = len(fits) > 1 and min(fits[1:]) < UNRELATED_SHARE * fits[0]
    return SpeechChecks(
        first_person=not _third_person_opener(response) and not _names_principal(response, principal),
        punctuated=bool(_FINAL.search(response.strip())),
        unmasked=MASK.search(response) is None,
        joined_unrelated=unrelated,
        speakable=not found,
        defects=tuple(found),
    )
