"""Webhook signing secrets: made from the CSPRNG, sealed at rest
(hangar.foundation.crypto.SecretBox)."""

from __future__ import annotations

import secrets

SECRET_PREFIX_LENGTH = 8


def new_secret() -> str:
    return secrets.token_hex(32)  # 64 hexadecimal characters
