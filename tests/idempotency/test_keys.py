"""An Idempotency-Key is 1 to 255 printable ASCII characters, sent once: anything else is
400 IDEMPOTENCY_KEY_INVALID {detail, code}, and nothing is done."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.idempotency import replay
from hangar.kit.errors import ApiError
from hangar.webhooks.models import Subscription
from tests.fixtures.factories import Org
from tests.fixtures.idempotency import NEW_WEBHOOK, count, keys_of, webhooks

HOSTILE = [
    "",
    "k" * 256,
    "tab\tinside",
    "nul\x00",
    "bell\x07",
    "del\x7f",
    "caf\u00e9",
    "line\r\nX-Injected: 1",
]


@pytest.mark.parametrize("key", HOSTILE, ids=repr)
async def test_a_hostile_key_is_refused_and_nothing_is_done(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine, key: str
) -> None:
    raw = [(b"Idempotency-Key", key.encode("latin-1"))]
    request = boss.build_request("POST", webhooks(org), json=NEW_WEBHOOK)
    request.headers = httpx.Headers(list(request.headers.raw) + raw)
    response = await boss.send(request)

    assert response.status_code == 400, response.text
    assert response.json()["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert set(response.json()) == {"detail", "code"}
    assert await count(engine, Subscription, org) == 0
    assert await keys_of(engine, org) == []


async def test_two_keys_in_one_request_are_refused(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    headers = [("Idempotency-Key", "a"), ("Idempotency-Key", "b")]
    response = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers=headers)
    assert response.status_code == 400
    assert response.json()["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert await count(engine, Subscription, org) == 0


@pytest.mark.parametrize(
    "key", ["x", "~" * 255, "9f1c3b9e-2a4d-4c1e-8f7a-1b2c3d4e5f60", "with space", "!#$%&'*+"]
)
async def test_printable_ascii_up_to_255_is_a_key(
    boss: httpx.AsyncClient, org: Org, engine: AsyncEngine, key: str
) -> None:
    response = await boss.post(webhooks(org), json=NEW_WEBHOOK, headers={"Idempotency-Key": key})
    assert response.status_code == 201, response.text
    assert [row.key for row in await keys_of(engine, org)] == [key]


def test_the_checks_own_rules() -> None:
    assert replay.checked_key(["k" * replay.MAX_KEY_LENGTH]) == "k" * 255
    with pytest.raises(ApiError):
        replay.checked_key([])
