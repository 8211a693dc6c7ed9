"""The meeting-bot services' keys, read from the server's environment once (`ATTENDEE_*`, `RECALL_*`): a service
whose keys are missing is named with what to set, never guessed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from delegate.integrations import attendee, recall
from delegate.integrations.attend import BotService
from delegate.integrations.bridge import MeetingBridge
from delegate.server.protocol import ErrorCode, ProtocolError, Via


class ServiceKeys:
    """Each service's settings, or what to set for it."""

    def __init__(self) -> None:
        self._settings: dict[str, Any] = {}
        self._missing: dict[str, str] = {}
        for via, read in (("attendee", attendee.AttendeeSettings), ("recall", recall.RecallSettings)):
            try:
                self._settings[via] = read()
            except ValidationError as e:
                self._missing[via] = ", ".join(f"{via.upper()}_{str(x['loc'][0]).upper()}" for x in e.errors(include_url=False))

    def service(self, via: Via, listen: attendee.Listen) -> Callable[[MeetingBridge], BotService]:
        settings = self._settings.get(via)
        if settings is None:
            raise ProtocolError(
                ErrorCode.not_configured,
                f"The server has no {via} keys: set {self._missing[via]} in its environment (docs/meetings.md).",
            )
        if via == "attendee":
            return attendee.service(settings, listen=listen)
        return recall.service(settings)
