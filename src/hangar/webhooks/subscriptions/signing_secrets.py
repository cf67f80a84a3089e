"""Webhook signing secrets: made from the CSPRNG, sealed at rest
(hangar.foundation.crypto.SecretBox), replaced by rotation with a grace window."""

from __future__ import annotations

import base64
import secrets

SECRET_PREFIX_LENGTH = 8
# Rotation: how long the secret it replaces goes on signing beside the new one (0 stops it at
# once). The default is a day, as for API keys; the most is GAFlight's 72 hours.
DEFAULT_GRACE_HOURS = 24
MAX_GRACE_HOURS = 72


def new_secret() -> str:
    return secrets.token_hex(32)  # 64 hexadecimal characters


def whsec_form(secret: str) -> str:
    """The secret as Standard Webhooks libraries take it: they base64-decode what follows
    `whsec_` and key with those bytes, so this form keys them with exactly the secret's UTF-8
    bytes, the key of both signatures (webhooks.signing)."""
    return "whsec_" + base64.b64encode(secret.encode()).decode()
