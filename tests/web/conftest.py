"""Invitation tests share `two_links`: one new email invited by both organizations."""

from tests.fixtures.invites import two_links  # noqa: F401
