"""Secrets sealed by an earlier release still open: the box's key derivation is fixed."""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.fernet import Fernet

from hangar.foundation.crypto import SecretBox
from hangar.kit.container import WEBHOOK_SECRETS


def test_a_secret_sealed_the_way_stored_secrets_were_sealed_opens() -> None:
    # Spelled out by hand (HMAC-SHA256 of "hangar/webhook-secrets" under HANGAR_SECRET_KEY,
    # as a Fernet key), so that moving or renaming the box can never silently change it.
    secret_key = "k" * 40
    derived = hmac.new(secret_key.encode(), b"hangar/webhook-secrets", hashlib.sha256).digest()
    sealed = Fernet(base64.urlsafe_b64encode(derived)).encrypt(b"whsec-earlier").decode()
    assert SecretBox(secret_key, WEBHOOK_SECRETS).open(sealed) == "whsec-earlier"
