"""A product action's one transaction (`hangar.http.routing.Tx`) commits before the response
goes out: a client told 201 finds the row and its events, and a failed commit is answered
with the error, never with the 2xx."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import event, func, select
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from starlette.types import Message, Receive, Scope, Send

from hangar.app import create_app
from hangar.auth import sessions
from hangar.kit.container import Services
from hangar.orgs.actors import Actor
from hangar.reservations import service
from hangar.reservations.models import Reservation
from hangar.reservations.schemas import ReservationRow
from tests.fixtures.actions import names, public, url
from tests.fixtures.clients import session_for
from tests.fixtures.factories import Org

SLOT = {
    "activity_type": "solo",
    "start_time": "2026-05-06T09:00:00Z",
    "end_time": "2026-05-06T11:00:00Z",
}


async def reservations_of(engine: AsyncEngine, org: Org) -> int:
    async with engine.connect() as conn:
        query = select(func.count()).select_from(Reservation).where(Reservation.org_id == org.id)
        return int((await conn.execute(query)).scalar_one())


async def test_a_failed_commit_is_answered_503_and_keeps_nothing(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, engine: AsyncEngine, org: Org
) -> None:
    create = service.create

    def refuse_commit(*_: Any) -> None:
        raise sa_exc.OperationalError("COMMIT", None, Exception("disk I/O error"))

    async def create_then_fail_at_commit(
        conn: AsyncConnection, actor: Actor, body: Any, now: Any
    ) -> ReservationRow:
        created = await create(conn, actor, body, now)
        # Only this request's connection: the commit that the route's return triggers fails.
        event.listen(conn.sync_connection, "commit", refuse_commit)
        return created

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(service, "create", create_then_fail_at_commit)
        failed = await admin.post(url(org, "reservations"), json=SLOT)

    assert failed.status_code == 503
    assert failed.json() == {
        "detail": "The service is temporarily unavailable; try again shortly",
        "code": "SERVICE_UNAVAILABLE",
    }
    assert (await public(client, org, "reservations"))["items"] == []
    assert await reservations_of(engine, org) == 0
    assert await names(engine, org.id) == []


async def test_the_change_and_its_events_are_committed_when_the_response_starts(
    services: Services, engine: AsyncEngine, org: Org
) -> None:
    app = create_app(services)
    seen: list[tuple[int, list[str]]] = []

    async def watching(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_after_looking(message: Message) -> None:
            if message["type"] == "http.response.start":
                # Another connection, before a byte of the response has gone out.
                seen.append((await reservations_of(engine, org), await names(engine, org.id)))
            await send(message)

        await app(scope, receive, send_after_looking)

    token, csrf = await session_for(services, org.admin_id)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=watching, raise_app_exceptions=False),
        base_url="https://hangar.example",
        cookies={sessions.COOKIE: token},
        headers={"X-CSRF-Token": csrf},
    ) as admin:
        created = await admin.post(url(org, "reservations"), json=SLOT)

    assert created.status_code == 201
    assert seen == [(1, ["reservation.confirmed", "reservation.created"])]
