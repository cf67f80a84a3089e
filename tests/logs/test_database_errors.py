"""A database error's message never carries the statement's parameters: they may be
credentials (a session's CSRF token, a key's hash), and such a message may reach a log."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine


async def test_a_failed_statement_names_no_parameter(engine: AsyncEngine) -> None:
    secret = "csrf-token-that-must-not-be-logged"
    with pytest.raises(DBAPIError) as raised:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT * FROM no_such_table WHERE x = :p"), {"p": secret})
    assert "no_such_table" in str(raised.value)  # the statement is still named
    assert secret not in str(raised.value)
