"""Is QuickQuery (hangar.external.query) still worth its reach into FastAPI's private module?

    .venv/bin/python -m bench.query_ab sqlite:////tmp/hangar-bench/quick.db
    .venv/bin/python -m bench.query_ab postgresql://root@127.0.0.1:5432/hangar_bench_quick

The HTTP rows cannot tell on this 2-core machine: a tenth of a server's CPU moves their
ratios less than the noise between two runs. This calls the ASGI app in its own process,
with no server and no client, and counts the CPU time of the process (every thread, the
SQLite driver's included) per request: `--rounds` pairs of processes, one with QuickQuery and
one with FastAPI's solver reading every query (QuickQuery.of answering None), alternating
which goes first, each timing `--requests` requests of every case after 100 of warm-up. It
prints each process's figures and the medians. The data is bench's --quick data (seeded if
missing; `prepare` also makes a key), with G15's events.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

API = "/api/v1/external"
ROUNDS = 8
REQUESTS = 500


async def measure(key: str, requests: int) -> dict[str, float]:
    """CPU microseconds per request of each case, in this process."""
    from bench.server import build_app
    from hangar.foundation.config import load_settings

    app = build_app("full", load_settings())
    state: dict[str, Any] = {}
    lifespan: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    started = asyncio.Event()

    async def send_lifespan(message: dict[str, Any]) -> None:
        if message["type"].startswith("lifespan.startup"):
            started.set()

    await lifespan.put({"type": "lifespan.startup"})
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": state}
    running = asyncio.create_task(app(scope, lifespan.get, send_lifespan))
    await started.wait()
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {key}".encode())]

    async def get(path: str, query: str) -> tuple[int, bytes]:
        answer: dict[str, Any] = {"status": 0, "body": b""}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answer["body"] += message.get("body", b"")

        request = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 8000),
            "state": dict(state),
        }
        await app(request, receive, send)
        return answer["status"], answer["body"]

    end = ""
    while True:  # a cursor at the end of the log: G15's poll that finds nothing new
        status, body = await get(f"{API}/events", "limit=500" + end)
        assert status == 200, body
        page = json.loads(body)
        end = f"&after={page['next_cursor']}"
        if len(page["items"]) < 500:
            break
    cases = {
        "events poll that finds nothing new": (f"{API}/events", "limit=500" + end),
        "/aircraft (60)": (f"{API}/aircraft", ""),
        "/reservations?limit=50&status=confirmed": (
            f"{API}/reservations",
            "limit=50&status=confirmed",
        ),
    }
    figures = {}
    for name, (path, query) in cases.items():
        for _ in range(100):
            status, body = await get(path, query)
            assert status == 200, body
        cpu = time.process_time()
        for _ in range(requests):
            await get(path, query)
        figures[name] = (time.process_time() - cpu) / requests * 1e6
    await lifespan.put({"type": "lifespan.shutdown"})
    running.cancel()
    return figures


def child(key: str, requests: int, quick: bool) -> None:
    import uvloop

    if not quick:
        from hangar.external.query import QuickQuery

        # Before the routes are built: every operation is left to FastAPI's solver.
        QuickQuery.of = classmethod(lambda cls, dependant: None)  # type: ignore[assignment,method-assign]
    print(json.dumps(uvloop.run(measure(key, requests))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database_url")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--requests", type=int, default=REQUESTS)
    parser.add_argument("--child", choices=("quick", "solver"), help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.key, args.requests, args.child == "quick")
        return

    from bench.__main__ import QUICK
    from bench.setup import ensure_events, prepare

    data = prepare(args.database_url, QUICK, None, print)
    ensure_events(data, print)
    runs: dict[str, list[dict[str, float]]] = {"quick": [], "solver": []}
    for round_ in range(args.rounds):
        for side in ("quick", "solver") if round_ % 2 == 0 else ("solver", "quick"):
            command = [sys.executable, "-m", "bench.query_ab", args.database_url]
            command += ["--child", side, "--key", data.key, "--requests", str(args.requests)]
            done = subprocess.run(  # noqa: S603 - our own module
                command, env=data.env, capture_output=True, text=True, check=True
            )
            runs[side].append(json.loads(done.stdout.splitlines()[-1]))
            shown = ", ".join(f"{v:,.0f}" for v in runs[side][-1].values())
            print(f"round {round_ + 1} {side}: {shown} us", flush=True)
    print(f"median CPU time a request, {args.rounds} processes a side:")
    for case in runs["quick"][0]:
        quick = statistics.median(run[case] for run in runs["quick"])
        solver = statistics.median(run[case] for run in runs["solver"])
        print(
            f"  {case}: solver {solver:,.0f} us, QuickQuery {quick:,.0f} us "
            f"({(quick - solver) / solver:+.0%})"
        )


if __name__ == "__main__":
    main()
