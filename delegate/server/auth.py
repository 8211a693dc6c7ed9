"""Bearer tokens: who is calling (whose meetings, in which role), and where the server may listen.

Two kinds of credential. A token of `DELEGATE_API_TOKENS` is a principal's: its holder owns the meetings it
creates and may do everything with them (read the private notes back, approve, edit, watch, download the
audit). A bot token is minted for one meeting of one owner (`bot_token`): the meeting's bot streams that
meeting with it and nothing else (`roles` says what each may do). A bot token is an HMAC under the
install's key, so every process that shares `DELEGATE_OWNER_KEY` checks it without a table.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from delegate.config import Settings
from delegate.server.protocol import ErrorCode, ProtocolError

ANONYMOUS = "anonymous"
BOT_TOKEN_PREFIX = "bot."


class Role(StrEnum):
    principal = "principal"
    """The principal's own clients (the console, their scripts): everything with their meetings."""
    bot = "bot"
    """The meeting's bot: streams one meeting, hears the delegate, asks for the meeting's ears only."""


@dataclass(frozen=True)
class Credential:
    """Who is calling: the owner whose meetings it reaches, its role, and for a bot the one meeting it is for."""

    owner: str
    role: Role = Role.principal
    meeting_id: str | None = None
    """A bot's meeting (the client's id, not namespaced); None for a principal."""

    @property
    def is_principal(self) -> bool:
        return self.role is Role.principal


def fingerprint(token: str, key: bytes) -> str:
    """What the server keeps of a token (in sessions and the audit log): never the token itself.

    Keyed: without the install's key, an owner id in a leaked audit log cannot be checked against
    guessed or leaked tokens, as an unsalted hash could."""
    return hmac.new(key, token.encode(), hashlib.sha256).hexdigest()[:32]


def owner_key(settings: Settings) -> bytes:
    """`DELEGATE_OWNER_KEY`, or the install's random key beside the audit database (made once, mode 0600)."""
    if settings.owner_key is not None:
        return settings.owner_key.get_secret_value().encode()
    path = Path(f"{settings.db_path}.owner-key")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes().strip()
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    return path.read_bytes().strip()


class Auth:
    """Tokens from `DELEGATE_API_TOKENS` (principals); a meeting belongs to the token that created it, and its bot
    token reaches that meeting alone.

    Without tokens every caller is the `anonymous` principal and may use every meeting (only safe on loopback),
    except one that presents a bot token: it is that meeting's bot.
    """

    def __init__(self, tokens: str, key: bytes) -> None:
        self._tokens = [t.strip() for t in tokens.split(",") if t.strip()]
        self._key = key

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def caller(self, authorization: str | None) -> str:
        """The caller's owner id from an `Authorization` header; ProtocolError(unauthorized) otherwise."""
        return self.credential(authorization).owner

    def credential(self, authorization: str | None) -> Credential:
        """The caller's credential from an `Authorization` header; ProtocolError(unauthorized) otherwise."""
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        bearer = scheme.lower() == "bearer" and bool(token)
        if bearer and token.startswith(BOT_TOKEN_PREFIX) and not self._known(token):
            return self._bot(token)
        if not self.enabled:
            return Credential(ANONYMOUS)
        if not authorization:
            raise ProtocolError(ErrorCode.unauthorized, "Missing `Authorization: Bearer <token>` header.")
        if not bearer:
            raise ProtocolError(ErrorCode.unauthorized, "Use `Authorization: Bearer <token>`.")
        if not self._known(token):
            raise ProtocolError(ErrorCode.unauthorized, "Unknown token.")
        return Credential(fingerprint(token, self._key))

    def _known(self, token: str) -> bool:
        # Compare against every token so timing does not tell how many matched or where.
        matched = False
        for known in self._tokens:
            matched |= hmac.compare_digest(token.encode(), known.encode())
        return matched

    def bot_token(self, owner: str, meeting_id: str) -> str:
        """The bearer token of `meeting_id`'s bot (the client's id), for the owner's meeting of that id."""
        return f"{BOT_TOKEN_PREFIX}{owner}.{self._bot_mac(owner, meeting_id)}.{meeting_id}"

    def _bot_mac(self, owner: str, meeting_id: str) -> str:
        return hmac.new(self._key, f"bot-token\0{owner}\0{meeting_id}".encode(), hashlib.sha256).hexdigest()[:40]

    def _bot(self, token: str) -> Credential:
        _, owner, mac, meeting_id = (token.split(".", 3) + ["", "", ""])[:4]
        # A bot token of a server that had no tokens names the anonymous owner: no longer valid once it has.
        valid = bool(owner and meeting_id) and not (self.enabled and owner == ANONYMOUS)
        if not hmac.compare_digest(mac.encode(), self._bot_mac(owner, meeting_id).encode()) or not valid:
            raise ProtocolError(ErrorCode.unauthorized, "Unknown bot token.")
        return Credential(owner, Role.bot, meeting_id)


def audit_id(owner: str, meeting_id: str) -> str:
    """Where a tenant's meeting lives in the registry and the audit log: ids are namespaced per owner, so
    no tenant can learn or take another's ids. Without auth (one tenant) the id is the client's own."""
    return meeting_id if owner == ANONYMOUS else f"{owner}/{meeting_id}"


def client_id(owner: str, key: str) -> str:
    """The client's meeting id back from its audit id."""
    prefix = f"{owner}/"
    return key[len(prefix) :] if owner != ANONYMOUS and key.startswith(prefix) else key


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(host: str, auth: Auth) -> None:
    """Refuse to listen beyond this machine without tokens: anyone could act as anyone's delegate."""
    if not auth.enabled and not is_loopback(host):
        raise ValueError(
            f"refusing to bind {host}: set DELEGATE_API_TOKENS (comma-separated bearer tokens) "
            "to serve beyond loopback, or bind 127.0.0.1"
        )
