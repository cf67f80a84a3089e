"""Whether this process's HANGAR_SECRET_KEY is the one the database's secrets are sealed with,
checked before any command or process starts (hangar.db.key_check).

A process with another key would fail every webhook delivery it takes and refuse every cursor
and signed link the others hand out: it refuses to start instead, in one line. The first
process to start once the check exists records the key that opens the newest live webhook
secret (its own, on a database holding none); `hangar secrets reseal` moves the record to
the current key once no secret needs an older one.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.db import key_check
from hangar.foundation.config import Settings
from hangar.webhooks.service import key_sealing_secrets

WRONG_KEY = (
    "HANGAR_SECRET_KEY is not the key this database's secrets are sealed with, and no key in "
    "HANGAR_SECRET_KEY_PREVIOUS is either: started, this process would fail every webhook "
    "delivery it took; give it the key the other processes use (README: Rotating the secret "
    "key)"
)


class WrongSecretKey(Exception):
    def __init__(self) -> None:
        super().__init__(WRONG_KEY)


def keys_of(settings: Settings) -> key_check.Keys:
    return key_check.Keys(settings.secret_key, settings.previous_secret_keys)


async def check_secret_key(conn: AsyncConnection, settings: Settings, now: datetime) -> None:
    """Raises WrongSecretKey unless one of the process's keys is the database's; records the
    key first if no process has yet."""
    found = await key_check.recorded(conn)
    if found is None:
        sealing = await key_sealing_secrets(conn, settings)
        if sealing is None:
            raise WrongSecretKey
        await key_check.record_first(conn, sealing, now)
        found = await key_check.recorded(conn)
        assert found is not None
    if not keys_of(settings).hold(found):
        raise WrongSecretKey
