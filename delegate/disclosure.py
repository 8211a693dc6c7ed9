"""What the delegate says of itself on joining a meeting: participants are owed to know a bot speaks for
someone (docs/meetings.md, "Consent and disclosure")."""

from __future__ import annotations

from delegate import guard
from delegate.models import Profile

DISCLOSURE = (
    "Hello, this is {name}'s AI delegate. I am listening for {name} and may answer for them; "
    "what I say is recorded for them."
)
"""Said on joining unless the app says otherwise."""

DISCLOSURE_WITHHELD = "(the disclosure was withheld: it touched a private item)"


def disclosure_for(principal: Profile, quotable: list[str] | None = None) -> str | None:
    """The disclosure for `principal`, or None when the guard refuses it (a private item in a name)."""
    text = DISCLOSURE.format(name=principal.name)
    return text if guard.check(text, principal, quotable or []).allowed else None
