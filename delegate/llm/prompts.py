"""Prompts as files: render `prompts/*.j2` with what a prompt may see, sized to a token budget.

This module is the privacy boundary of every prompt: a profile reaches a template only through
`principal_view`, which keeps shareable background items and nothing else.

The repository's top-level `prompts/` is the package resource `delegate/prompt_files` (a relative
symlink), so a checkout, an editable install and a wheel all read it through the import system.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import jinja2
from pydantic import BaseModel

from delegate.language.text import MASK
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile

PROMPTS_PACKAGE = "delegate"
PROMPTS_RESOURCE = "prompt_files"

_CHARS_PER_TOKEN = 4
"""English text averages about four characters a token in the tokenizers of common chat models."""


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader(PROMPTS_PACKAGE, PROMPTS_RESOURCE),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def render(name: str, **context: Any) -> str:
    """Render `prompts/<name>`. Raw profiles are refused so that a template cannot see private items."""
    for key, value in context.items():
        if isinstance(value, Profile | BackgroundItem):
            raise TypeError(
                f"prompt context {key!r}: pass principal_view(profile), not a {type(value).__name__}"
            )
    return _environment().get_template(name).render(**context).strip() + "\n"


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate, good enough to keep a prompt inside a context budget."""
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def shareable_background(profile: Profile) -> list[tuple[int, BackgroundItem]]:
    """The principal's background items that may be spoken, with their index in `profile.background`."""
    return [(i, item) for i, item in enumerate(profile.background) if item.shareable]


def principal_view(profile: Profile) -> dict[str, Any]:
    """What a prompt may know about the principal: never an item with `shareable: false`."""
    return {
        "name": profile.name,
        "label": profile.speaker_label,
        "aliases": [a for a in profile.aliases if a not in (profile.name, profile.speaker_label)],
        "intents": list(profile.intents),
        "background": [
            {"index": i, "context": item.context, "information": item.information}
            for i, item in shareable_background(profile)
        ],
    }


class Line(BaseModel):
    """One transcript line as a prompt shows it."""

    id: int
    speaker: str
    text: str
    principal: bool = False


def _unmask(text: str, names: dict[str, str]) -> str:
    return MASK.sub(lambda m: names.get(m.group(1), m.group(0)), text)


def _fit(text: str, tokens: int) -> str:
    """The end of `text` within `tokens`: a question or a name usually closes an utterance."""
    chars = max(tokens, 1) * _CHARS_PER_TOKEN
    return text if len(text) <= chars else "…" + text[-chars:]


def transcript_window(meeting: MeetingState, principal: Profile, budget_tokens: int) -> list[Line]:
    """The latest utterances that fit in `budget_tokens`, oldest first; the newest one always, cut if need be.

    Walks back from the end only as far as the budget reaches, so the cost does not grow with the meeting.
    """
    lines: list[Line] = []
    left = budget_tokens
    for u in reversed(meeting.utterances):
        speaker = meeting.display_name(u.speaker)
        text = _unmask(u.text, meeting.names)
        cost = approx_tokens(f"{speaker}: {text}\n")
        if cost > left:
            if lines:
                break
            text = _fit(text, left - approx_tokens(f"{speaker}: \n"))
            cost = left
        lines.append(
            Line(id=u.id, speaker=speaker, text=text, principal=u.speaker == principal.speaker_label)
        )
        left -= cost
    lines.reverse()
    return lines


def tail_within(lines: list[str], budget_tokens: int) -> list[str]:
    """The last of `lines` (already formatted) that fit in `budget_tokens`, oldest first."""
    out: list[str] = []
    left = budget_tokens
    for line in reversed(lines):
        cost = approx_tokens(line + "\n")
        if cost > left:
            if not out:
                out.append(_fit(line, left))
            break
        out.append(line)
        left -= cost
    out.reverse()
    return out
