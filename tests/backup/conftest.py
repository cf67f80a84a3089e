"""Backup tests deliver to a real HTTPS receiver on loopback (tests/fixtures/receivers.py)
while they back up, and restore into databases of their own."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from scripts.scratch import scratch_database

from tests.fixtures.cli import cli  # noqa: F401
from tests.fixtures.environment import PG_URL
from tests.fixtures.receivers import ca, empty_queue, receiver, sender  # noqa: F401
from tests.fixtures.webhooks import hooks  # noqa: F401


@pytest.fixture
async def restored_url(tmp_path: Path) -> AsyncIterator[str]:
    """Where a test restores to: an empty database of this run's kind, never migrated (a
    SQLite path not made yet; on PostgreSQL a database of its own)."""
    if not PG_URL:
        yield f"sqlite:///{tmp_path / 'restored' / 'hangar.db'}"
        return
    async with scratch_database(PG_URL, "hangar_restored") as url:
        yield url
