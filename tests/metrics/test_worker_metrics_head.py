"""The worker's own /metrics answers HEAD as GET, as every GET of the server does (RFC 9110
§9.3.2): the GET's status and headers, no body, and the same token rule."""

from __future__ import annotations

from dataclasses import replace

import httpx

from hangar.kit.container import Services
from hangar.wiring.worker_metrics import metrics_app
from tests.fixtures.metrics import TOKEN


async def test_the_workers_metrics_answer_head_as_get(services: Services) -> None:
    app = metrics_app(replace(services, settings=replace(services.settings, metrics_token=TOKEN)))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://w") as client:
        got = await client.get("/metrics", headers=auth)
        head = await client.head("/metrics", headers=auth)
        refused = await client.head("/metrics")
        elsewhere = await client.head("/api/health", headers=auth)
    assert got.status_code == head.status_code == 200
    assert b"hangar_webhook_deliveries_pending" in got.content
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert refused.content == b""
    assert elsewhere.status_code == 404
