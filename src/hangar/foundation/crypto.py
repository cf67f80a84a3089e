"""Keys derived from HANGAR_SECRET_KEY, one per purpose, so no two uses share a key, and the box
that seals secrets at rest under one of them (a database dump alone opens nothing).

After a rotation the keys HANGAR_SECRET_KEY replaced (HANGAR_SECRET_KEY_PREVIOUS) still open
what they sealed; only the current key seals (cryptography's MultiFernet). `token_digest` is
the one digest under which the random secrets hangar hands out are stored."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet


def token_digest(token: str) -> str:
    """What is stored of a random secret handed out (an API key, a session's token, an
    invitation's or a password reset's link, a sign-in challenge, a recovery code): its
    SHA-256 in hex, so a dump of the table holds nothing usable."""
    return hashlib.sha256(token.encode()).hexdigest()


def derive_key(secret_key: str, purpose: str) -> bytes:
    return hmac.new(secret_key.encode(), b"hangar/" + purpose.encode(), hashlib.sha256).digest()


class SecretUnreadable(Exception):
    """Sealed under a key that is neither HANGAR_SECRET_KEY nor one of
    HANGAR_SECRET_KEY_PREVIOUS (or damaged): no retry will ever open it."""


class SecretBox:
    """Seals with the current key; opens what the current or any previous key sealed."""

    def __init__(self, secret_key: str, purpose: str, previous: Sequence[str] = ()) -> None:
        self._current = _fernet(secret_key, purpose)
        self._any = MultiFernet([self._current, *(_fernet(key, purpose) for key in previous)])

    def seal(self, secret: str) -> str:
        return self._current.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._any.decrypt(sealed.encode()).decode()
        except InvalidToken:
            raise SecretUnreadable from None

    def resealed(self, sealed: str) -> str | None:
        """`sealed` sealed again under the current key, or None when it already is."""
        try:
            self._current.decrypt(sealed.encode())
        except InvalidToken:
            pass
        else:
            return None
        try:
            return self._any.rotate(sealed.encode()).decode()
        except InvalidToken:
            raise SecretUnreadable from None


def _fernet(secret_key: str, purpose: str) -> Fernet:
    return Fernet(base64.urlsafe_b64encode(derive_key(secret_key, purpose)))
