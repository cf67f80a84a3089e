"""`hangar worker --metrics-port`: a worker process serves its own GET /metrics, with the
deliveries it made and the queue's gauges, under the server's names and its token rule."""

from __future__ import annotations

from pathlib import Path

import httpx
import trustme

from hangar.kit.container import Services
from hangar.webhooks.events import catalogue
from tests.fixtures.factories import Org
from tests.fixtures.metrics import TOKEN, labels, scrape
from tests.fixtures.receivers import Receiver
from tests.fixtures.subprocesses import eventually
from tests.fixtures.webhooks import deliveries, fire, subscribe
from tests.fixtures.worker_command import worker_command


async def test_the_worker_serves_its_delivery_counters_and_the_queue_gauges(
    services: Services,
    org: Org,
    receiver: Receiver,
    ca: trustme.CA,
    tmp_path: Path,
    repo_root: Path,
) -> None:
    sub_id = await subscribe(services, org, receiver.url("/worker"), [catalogue.SQUAWK_CREATED])
    # Fired before the worker starts, so that its first look finds the delivery: on SQLite no
    # signal reaches another process, and an idle worker looks again only after 30 s.
    await fire(services, org)
    env = {"HANGAR_METRICS_TOKEN": TOKEN, "HANGAR_LOG_FORMAT": "json"}
    async with (
        worker_command(services.settings.database_url, ca, tmp_path, repo_root, env) as (
            worker,
            base,
        ),
        httpx.AsyncClient(base_url=base, timeout=10) as client,
    ):

        async def delivered() -> bool:
            return await deliveries(services.engine, sub_id) == [("succeeded", 1)]

        await eventually(delivered, 10, "the worker delivered")
        samples = await scrape(client)
        refused = [
            await client.get("/metrics"),
            await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}x"}),
        ]
        elsewhere = await client.get("/api/health", headers={"Authorization": f"Bearer {TOKEN}"})

    event = catalogue.SQUAWK_CREATED
    # The worker's own counters (a fresh process: this one delivery), and the gauges read from
    # the database at the scrape.
    attempts = ("hangar_webhook_attempts_total", labels(event=event, outcome="succeeded"))
    finished = ("hangar_webhook_deliveries_finished_total", labels(event=event, status="succeeded"))
    assert samples[attempts] == samples[finished] == 1
    assert samples[("hangar_webhook_deliveries_pending", ())] == 0
    assert ("hangar_webhook_oldest_due_delivery_age_seconds", ()) in samples
    assert samples[("hangar_scheduler_ticks_total", ())] >= 1
    for response in refused:
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert response.json()["code"] == "UNAUTHORIZED"
    assert elsewhere.status_code == 404
    assert elsewhere.json() == {"detail": "Not found", "code": "NOT_FOUND"}
    [start] = [line for line in worker.output().splitlines() if "starting:" in line]
    assert f'"metrics":"{base.removeprefix("http://")}"' in start
    # The successful scrape wrote no access line; the two refusals and the 404 did.
    output = worker.output()
    assert output.count('"logger":"uvicorn.access"') == 3, output
