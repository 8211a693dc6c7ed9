"""Mail in the formats people export: an mbox file or single .eml files (standard library only)."""

from __future__ import annotations

import email.policy
import mailbox
from email.message import EmailMessage
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path

from delegate.sources.gmail import mail_item
from delegate.sources.items import SourceError, SourceItem


def _addresses(message: EmailMessage, header: str) -> list[str]:
    return [addr for _, addr in getaddresses([str(v) for v in message.get_all(header, [])]) if addr]


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    text = part.get_content()
    return text if isinstance(text, str) else ""


def message_item(message: EmailMessage, where: str) -> SourceItem:
    message_id = str(message.get("Message-ID", "")).strip().strip("<>")
    if not message_id:
        raise SourceError(f"{where}: a message without a Message-ID (subject {message.get('Subject', '')!r})")
    try:
        date = parsedate_to_datetime(str(message["Date"])) if message["Date"] else None
    except (TypeError, ValueError) as e:
        raise SourceError(f"{where}: message {message_id}: unreadable Date {message['Date']!r}") from e
    sender = next(iter(_addresses(message, "From")), "")
    return mail_item(message_id, sender, _addresses(message, "To"), _addresses(message, "Cc"), date,
                     str(message.get("Subject", "")), _body(message))


def read_mbox(path: Path) -> list[SourceItem]:
    if not path.is_file():
        raise SourceError(f"{path}: no such file")
    box = mailbox.mbox(str(path), factory=lambda f: email.message_from_binary_file(f, policy=email.policy.default), create=False)
    try:
        return [message_item(m, str(path)) for m in box]  # type: ignore[arg-type]
    finally:
        box.close()


def read_eml(path: Path) -> SourceItem:
    try:
        with path.open("rb") as f:
            message = email.message_from_binary_file(f, policy=email.policy.default)
    except OSError as e:
        raise SourceError(f"{path}: cannot read: {e.strerror or e}") from e
    return message_item(message, str(path))  # type: ignore[arg-type]
