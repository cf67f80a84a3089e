"""The database's check of HANGAR_SECRET_KEY: a fingerprint of the key its secrets are sealed
with, so that a process holding another key refuses to start instead of failing every
delivery it takes (issue 40: one machine with a typo in its key disabled every tenant's
webhooks within 25 s).

The fingerprint (`fingerprint`, as in backup manifests) opens nothing and names no other key
derived from the secret key. One row, written by the first process to start once this table
exists, and moved to the current key by `hangar secrets reseal` once no secret needs an older
one (or by a restore that gives up the backup's key).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Integer, String, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base
from hangar.foundation.crypto import derive_key

_ROW = 1


class SecretKeyCheck(Base):
    __tablename__ = "secret_key_checks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    set_at: Mapped[datetime]


def fingerprint(secret_key: str) -> str:
    """Names a secret key without giving it away: 64 bits of an HMAC derived for this purpose
    alone, from which neither the key nor any other key derived from it can be learnt. The
    same in backup manifests (hangar.db.backup), whose purpose name it keeps."""
    return derive_key(secret_key, "backup-fingerprint").hex()[:16]


@dataclass(frozen=True)
class Keys:
    """A process's keys: HANGAR_SECRET_KEY (None only for a restore into a new SQLite file
    whose key file is not beside it yet) and the keys a rotation replaced."""

    current: str | None
    previous: tuple[str, ...] = ()

    @property
    def held(self) -> tuple[str, ...]:
        """Every key this process holds, the current one first."""
        return (self.current, *self.previous) if self.current else self.previous

    def fingerprints(self) -> set[str]:
        return {fingerprint(key) for key in self.held}

    def hold(self, found: str) -> bool:
        """Whether one of these keys has the fingerprint `found` (each compared in constant
        time)."""
        matches = [hmac.compare_digest(mine, found) for mine in sorted(self.fingerprints())]
        return any(matches)


async def recorded(conn: AsyncConnection) -> str | None:
    """The fingerprint the database holds, or None before any process wrote one."""
    return await conn.scalar(select(SecretKeyCheck.fingerprint).where(SecretKeyCheck.id == _ROW))


async def record(conn: AsyncConnection, secret_key: str, at: datetime) -> None:
    """Makes `secret_key` the one the database's secrets are sealed with."""
    values = {"fingerprint": fingerprint(secret_key), "set_at": at}
    moved = await conn.execute(
        update(SecretKeyCheck).where(SecretKeyCheck.id == _ROW).values(**values)
    )
    if moved.rowcount == 0:
        await conn.execute(insert(SecretKeyCheck).values(id=_ROW, **values))


async def record_first(conn: AsyncConnection, secret_key: str, at: datetime) -> None:
    """Writes the first fingerprint, unless another process starting at the same moment
    already has: then that one stands, and the caller reads it back."""
    values = {"id": _ROW, "fingerprint": fingerprint(secret_key), "set_at": at}
    dialect = conn.dialect.name
    statement = (pg_insert if dialect == "postgresql" else sqlite_insert)(SecretKeyCheck)
    await conn.execute(statement.values(**values).on_conflict_do_nothing())
