"""`hangar serve --workers 2` and its metrics: every process writes its own files in the
one PROMETHEUS_MULTIPROC_DIR the supervisor made for this instance, and a scrape answered by
either server process adds up all of them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
import trustme
from prometheus_client.multiprocess import MultiProcessCollector

from hangar import __version__
from tests.fixtures.environment import PG_URL, REDIS_URL
from tests.fixtures.external import API
from tests.fixtures.factories import Org
from tests.fixtures.metrics import TOKEN, labels, scrape
from tests.fixtures.serve_process import serve_process
from tests.fixtures.subprocesses import eventually

AIRCRAFT = f"{API}/aircraft"
NEW_CONNECTIONS = httpx.Limits(max_keepalive_connections=0)


def answered_by_pid(directory: Path) -> dict[str, float]:
    """{pid: aircraft GETs answered 200} from each server process's own counter file."""
    counts = {}
    for path in directory.glob("counter_*.db"):
        pid = path.stem.removeprefix("counter_")
        merged = MultiProcessCollector.merge([str(path)])  # type: ignore[no-untyped-call]
        [family] = [m for m in merged if m.name == "hangar_http_requests"] or [None]
        if family is None:
            continue
        counts[pid] = sum(
            s.value
            for s in family.samples
            if s.name == "hangar_http_requests_total"
            and s.labels == {"operation": AIRCRAFT, "method": "GET", "status": "200"}
        )
    return counts


@pytest.mark.skipif(not (PG_URL and REDIS_URL), reason="--workers 2 needs PostgreSQL and Redis")
async def test_a_scrape_adds_up_the_requests_every_process_answered(
    database_url: str, ca: trustme.CA, tmp_path: Path, repo_root: Path, org: Org, other: Org
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {"HANGAR_METRICS_TOKEN": TOKEN, "TMPDIR": str(temporary)}
    async with (
        serve_process(database_url, 2, ca, tmp_path, repo_root, env) as served,
        httpx.AsyncClient(base_url=served.base, limits=NEW_CONNECTIONS) as client,
    ):
        # The instance's own directory, named after its port, in its TMPDIR.
        [directory] = temporary.glob(f"hangar-metrics-{served.port}-*")
        made = 0
        # Batches at once, each request on a connection of its own, until both server
        # processes have answered some (a fresh key per batch: 60 a minute each).
        while len([n for n in answered_by_pid(directory).values() if n]) < 2:
            assert made < 200, answered_by_pid(directory)
            key = {"Authorization": f"Bearer {await org.key_with('read:aircraft')}"}
            batch = await asyncio.gather(*(client.get(AIRCRAFT, headers=key) for _ in range(20)))
            assert [r.status_code for r in batch] == [200] * 20
            made += 20
        assert (await client.get(AIRCRAFT, headers=other.auth)).status_code == 200
        made += 1
        first = await scrape(client)
        second = await scrape(client)
        # Each live process's own CPU and memory, by pid (issue 40: the multiprocess scrape
        # had none): the two server processes and the worker beside them, each with a file.
        live = {path.stem.rpartition("_")[2] for path in directory.glob("*.db")}
        # Read after a scrape has seen all of them: a process counts a request as its
        # response ends, which may be just after the client has it.
        by_pid = answered_by_pid(directory)

        async def ticked() -> bool:
            return (await scrape(client)).get(("hangar_scheduler_ticks_total", ()), 0) >= 1

        # The worker process's scheduler ticks at its start, in a file of its own.
        await eventually(ticked, 60, "the worker's tick in the scrape")

    answered = (
        "hangar_http_requests_total",
        labels(operation=AIRCRAFT, method="GET", status="200"),
    )
    assert first[answered] == second[answered] == made
    rss = {dict(k[1])["pid"] for k in first if k[0] == "process_resident_memory_bytes"}
    assert rss == live
    assert len(live) == 3  # two server processes, one worker
    assert all(first[k] > 0 for k in first if k[0] == "process_resident_memory_bytes")
    assert first[("hangar_build_info", labels(version=__version__))] == 1
    assert sum(by_pid.values()) == made
    assert not directory.exists()  # removed as the instance stopped
    # One start line for the instance, not one per process.
    [start] = [line for line in served.server.output().splitlines() if "starting:" in line]
    assert "role=serve" in start
    assert "processes=2 delivers_webhooks=yes metrics=on" in start
