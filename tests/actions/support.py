"""Helpers for product-action tests: URLs, who am I, and what the outbox recorded."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.ids import new_id
from hangar.webhooks.models import Delivery, Event, Subscription
from tests.factories import T0, Org


def url(org: Org, path: str) -> str:
    return f"/api/orgs/{org.id}/{path}"


async def user_id(client: httpx.AsyncClient) -> str:
    response = await client.get("/api/session")
    return str(response.json()["user"]["id"])


async def public(client: httpx.AsyncClient, org: Org, resource: str) -> Any:
    """What the public, key-authenticated API shows of `resource`."""
    response = await client.get(f"/api/v1/external/{resource}", headers=org.auth)
    assert response.status_code == 200, response.text
    return response.json()


async def public_one(client: httpx.AsyncClient, org: Org, resource: str, row_id: str) -> Any:
    found = await public(client, org, resource)
    items = found["items"] if isinstance(found, dict) else found
    return next((item for item in items if item["id"] == row_id), None)


async def raw_events(engine: AsyncEngine, org_id: uuid.UUID) -> list[tuple[str, str]]:
    """(name, data as stored) of every event of the organization."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(Event.name, Event.data).where(Event.org_id == org_id).order_by(Event.id)
        )
        return [(row.name, row.data) for row in rows]


async def events(engine: AsyncEngine, org_id: uuid.UUID, name: str) -> list[dict[str, Any]]:
    """The decoded data of each `name` event of the organization."""
    return [orjson.loads(data) for n, data in await raw_events(engine, org_id) if n == name]


async def names(engine: AsyncEngine, org_id: uuid.UUID) -> list[str]:
    return sorted(n for n, _ in await raw_events(engine, org_id))


async def subscribe(org: Org, events: list[str], *, enabled: bool = True) -> uuid.UUID:
    sub_id = new_id()
    async with org.engine.begin() as conn:
        await conn.execute(
            insert(Subscription).values(
                id=sub_id,
                org_id=org.id,
                name="receiver",
                url="https://receiver.example/hook",
                events=events,
                secret_encrypted="not-a-real-secret",
                secret_prefix="abcd1234",
                enabled=enabled,
                consecutive_failures=0,
                created_at=T0,
                updated_at=T0,
            )
        )
    return sub_id


async def deliveries(engine: AsyncEngine, subscription_id: uuid.UUID) -> list[str]:
    """Event names of the subscription's pending deliveries, sorted."""
    async with engine.connect() as conn:
        rows = await conn.scalars(
            select(Delivery.event_name).where(
                Delivery.subscription_id == subscription_id, Delivery.status == "pending"
            )
        )
        return sorted(rows)


def utc(text: str) -> datetime:
    """A timestamp as the API writes it: ISO 8601 in UTC with Z."""
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text).astimezone(UTC)
