"""Webhook signing secrets: generated from the CSPRNG, kept encrypted at rest.

The key is derived from HANGAR_SECRET_KEY, so a database dump alone signs nothing.
"""

from __future__ import annotations

import base64
import secrets

from cryptography.fernet import Fernet, InvalidToken

from hangar.crypto import derive_key

SECRET_PREFIX_LENGTH = 8


class SecretUnreadable(Exception):
    """Sealed under another HANGAR_SECRET_KEY (or damaged): no retry will ever open it."""


def new_secret() -> str:
    return secrets.token_hex(32)  # 64 hexadecimal characters


class SecretBox:
    def __init__(self, secret_key: str) -> None:
        key = base64.urlsafe_b64encode(derive_key(secret_key, "webhook-secrets"))
        self._fernet = Fernet(key)

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            raise SecretUnreadable from None
