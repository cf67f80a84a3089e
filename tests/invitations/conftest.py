"""Invitation tests share `two_links` (one new email invited by both organizations) and
`mailbox` (a mail server on loopback; a module that sends by mail points its settings at it)."""

from collections.abc import AsyncIterator

import pytest

from tests.fixtures.invites import two_links  # noqa: F401
from tests.fixtures.smtp import MailServer, mail_server


@pytest.fixture
async def mailbox() -> AsyncIterator[MailServer]:
    async with mail_server() as server:
        yield server
