"""Idempotency tests: each organization's own admin, signed in."""

from tests.fixtures.idempotency import boss, their_boss  # noqa: F401
