"""The sign-in tests' account and their count of verified passwords."""

from __future__ import annotations

import pytest

from hangar.auth import passwords
from tests.fixtures.factories import Org
from tests.fixtures.receivers import ca  # noqa: F401 (a real server's, test_sign_in_races)
from tests.fixtures.sign_ins import PASSWORD


@pytest.fixture
async def owner_email(org: Org, other: Org) -> str:
    email = f"owner-{org.id.hex[-12:]}@example.org"
    await org.member("admin", email=email, password=PASSWORD)
    return email


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every password verified, in order (the real argon2 verification still runs)."""
    seen: list[str] = []
    real = passwords.verify_password

    def counted(password_hash: str, password: str) -> bool:
        seen.append(password)
        return real(password_hash, password)

    monkeypatch.setattr(passwords, "verify_password", counted)
    return seen
