"""Keys derived from HANGAR_SECRET_KEY, one per purpose, so no two uses share a key, and the box
that seals secrets at rest under one of them (a database dump alone opens nothing)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.fernet import Fernet, InvalidToken


def derive_key(secret_key: str, purpose: str) -> bytes:
    return hmac.new(secret_key.encode(), b"hangar/" + purpose.encode(), hashlib.sha256).digest()


class SecretUnreadable(Exception):
    """Sealed under another HANGAR_SECRET_KEY (or damaged): no retry will ever open it."""


class SecretBox:
    def __init__(self, secret_key: str, purpose: str) -> None:
        key = base64.urlsafe_b64encode(derive_key(secret_key, purpose))
        self._fernet = Fernet(key)

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            raise SecretUnreadable from None
