"""Webhook signing secrets: generated from the CSPRNG, kept encrypted at rest.

The key is derived from HANGAR_SECRET_KEY, so a database dump alone signs nothing.
"""

from __future__ import annotations

import base64
import secrets

from cryptography.fernet import Fernet

from hangar.crypto import derive_key

SECRET_PREFIX_LENGTH = 8


def new_secret() -> str:
    return secrets.token_hex(32)  # 64 hexadecimal characters


class SecretBox:
    def __init__(self, secret_key: str) -> None:
        key = base64.urlsafe_b64encode(derive_key(secret_key, "webhook-secrets"))
        self._fernet = Fernet(key)

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str:
        return self._fernet.decrypt(sealed.encode()).decode()
