"""Bearer tokens: who is calling, whether they may touch a meeting, and where the server may listen."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

from delegate.server.protocol import ErrorCode, ProtocolError

ANONYMOUS = "anonymous"


def fingerprint(token: str) -> str:
    """What the server keeps of a token (in sessions and the audit log): never the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


class Auth:
    """Tokens from `DELEGATE_API_TOKENS`; a meeting belongs to the token that created it.

    Without tokens every caller is `anonymous` and may use every meeting: only safe on loopback.
    """

    def __init__(self, tokens: str) -> None:
        self._tokens = [t.strip() for t in tokens.split(",") if t.strip()]

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def caller(self, authorization: str | None) -> str:
        """The caller's identity from an `Authorization` header; ProtocolError(unauthorized) otherwise."""
        if not self.enabled:
            return ANONYMOUS
        if not authorization:
            raise ProtocolError(ErrorCode.unauthorized, "Missing `Authorization: Bearer <token>` header.")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ProtocolError(ErrorCode.unauthorized, "Use `Authorization: Bearer <token>`.")
        # Compare against every token so timing does not tell how many matched or where.
        matched = False
        for known in self._tokens:
            matched |= hmac.compare_digest(token.encode(), known.encode())
        if not matched:
            raise ProtocolError(ErrorCode.unauthorized, "Unknown token.")
        return fingerprint(token)

    def check_owner(self, caller: str, owner: str) -> None:
        if self.enabled and not hmac.compare_digest(caller, owner):
            raise ProtocolError(ErrorCode.forbidden)


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
