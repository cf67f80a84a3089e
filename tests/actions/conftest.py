"""Signed-in clients of the roles the shared conftest does not provide, and the callers a
management action must turn away."""

import httpx
import pytest

from tests.fixtures.actions import Outsiders
from tests.fixtures.clients import role_client

instructor = role_client("instructor")
mechanic = role_client("mechanic")


@pytest.fixture
def outsiders(
    member: httpx.AsyncClient, instructor: httpx.AsyncClient, outsider: httpx.AsyncClient
) -> Outsiders:
    return Outsiders(member, instructor, outsider)
