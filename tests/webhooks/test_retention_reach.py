"""How far back the delivery log and Redeliver reach: a delivery pruned by retention is gone
from the log, and Redeliver of it answers 404 NOT_FOUND saying how long deliveries are
kept (HANGAR_DELIVERY_RETENTION_DAYS)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import httpx
from sqlalchemy import update

from hangar.webhooks.models import Delivery
from tests.fixtures.clients import signed_in_as
from tests.fixtures.retention import pruned, with_days
from tests.fixtures.webhooks import Hooks, delivery_log


async def test_a_pruned_delivery_is_gone_and_redeliver_says_how_long_deliveries_are_kept(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org, now = hooks.org, hooks.clock.now()
    sub_id, delivery_id = await hooks.delivered_once()
    redeliver = f"/api/orgs/{org.id}/webhooks/{sub_id}/deliveries/{delivery_id}/redeliver"
    assert [entry["id"] for entry in await delivery_log(admin, org, sub_id)] == [delivery_id]
    # It finished 31 days ago, as far as retention is concerned.
    async with hooks.services.engine.begin() as conn:
        await conn.execute(
            update(Delivery)
            .where(Delivery.id == uuid.UUID(delivery_id))
            .values(completed_at=now - timedelta(days=31))
        )

    await pruned(hooks.services, now)

    assert await delivery_log(admin, org, sub_id) == []
    gone = await admin.post(redeliver)
    assert gone.status_code == 404
    assert gone.json() == {
        "detail": "No such delivery. Deliveries are kept for 30 days after they finish.",
        "code": "NOT_FOUND",
    }


async def test_the_404_says_the_window_the_service_is_set_to(hooks: Hooks) -> None:
    sub_id, _ = await hooks.delivered_once()
    unknown = f"/api/orgs/{hooks.org.id}/webhooks/{sub_id}/deliveries/{uuid.uuid4()}/redeliver"
    for days, said in ((1, "1 day"), (90, "90 days")):
        async with signed_in_as(with_days(hooks.services, days), hooks.org.admin_id) as admin:
            answer = await admin.post(unknown)
        assert answer.status_code == 404
        assert answer.json()["detail"] == (
            f"No such delivery. Deliveries are kept for {said} after they finish."
        )
