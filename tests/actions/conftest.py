"""Signed-in clients of the roles the shared conftest does not provide."""

from tests.fixtures.clients import role_client

instructor = role_client("instructor")
mechanic = role_client("mechanic")
