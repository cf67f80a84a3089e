"""Load check of the per-key rate limit: 50 keys at their limits for two calendar minutes.

Runs two `hangar serve --no-worker` processes on loopback against a PostgreSQL database of
its own (created here and dropped afterwards) and a shared Redis, then drives 50 keys, each
alternating between the two processes, as fast as they are answered until refused. Checks
that every key got exactly 60 answers per calendar minute, then only 429s, and that no
answer was a 5xx. Not part of CI (it takes about three minutes):

    .venv/bin/python scripts/load_rate_limits.py \\
        --database-url postgresql://root@127.0.0.1:5432/test --redis-url redis://127.0.0.1:6379/0

Requests are not sent in the 300 ms around the top of each minute, so each one's minute is
known on the client side too (server and client share the machine's clock).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from scripts.scratch import scratch_database, two_servers  # noqa: E402

from hangar.db.engine import make_engine  # noqa: E402
from hangar.db.migrate import upgrade_async  # noqa: E402
from hangar.foundation.clock import SystemClock  # noqa: E402
from hangar.keys.issuing import issue_key  # noqa: E402
from hangar.orgs.commands import create_org  # noqa: E402

KEYS = 50
LIMIT = 60
PATH = "/api/v1/external/aircraft"
GUARD = 0.3  # seconds kept quiet either side of a minute boundary
EXTRA_AFTER_429 = 3  # refused requests sent back to back; then one a second to the minute's end


def seconds_into_minute() -> float:
    return time.time() % 60


async def sleep_until_next_minute(offset: float = GUARD) -> int:
    now = time.time()
    target = (int(now // 60) + 1) * 60 + offset
    await asyncio.sleep(target - now)
    return int(target // 60)


async def prepare(database_url: str) -> tuple[str, list[str]]:
    await upgrade_async(database_url)
    engine = make_engine(database_url)
    now = SystemClock().now()
    try:
        async with engine.begin() as conn:
            org_id = await create_org(conn, f"Load {uuid.uuid4().hex[:6]}", now)
            keys = [
                (
                    await issue_key(
                        conn, org_id, name=f"load-{i}", scopes=["read:aircraft"], now=now
                    )
                ).key
                for i in range(KEYS)
            ]
    finally:
        await engine.dispose()
    return str(org_id), keys


async def drive_key(
    key: str,
    bases: list[str],
    client: httpx.AsyncClient,
    minutes: list[int],
    results: dict[tuple[int, int], Counter[int]],
    latencies: list[float],
    index: int,
) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    turn = index
    for minute in minutes:
        refused_seen = 0
        while True:
            now = time.time()
            if int(now // 60) < minute:  # this key's minute has not begun yet
                await asyncio.sleep(minute * 60 + GUARD - now)
                continue
            if int(now // 60) > minute or now % 60 > 60 - GUARD:
                break  # over, or too close to the boundary: this minute is done
            base = bases[turn % 2]
            turn += 1
            started = time.perf_counter()
            response = await client.get(base + PATH, headers=headers)
            latencies.append(time.perf_counter() - started)
            sent_minute = int(now // 60)
            results[(index, sent_minute)][response.status_code] += 1
            if response.status_code == 429:
                refused_seen += 1
                if refused_seen >= EXTRA_AFTER_429:
                    # Keep knocking, once a second, until the minute ends: nothing more may
                    # get through late in the minute either.
                    await asyncio.sleep(1.0)


async def run(args: argparse.Namespace) -> int:
    async with scratch_database(args.database_url, "hangar_load") as database_url:
        _, keys = await prepare(database_url)
        env = {
            **os.environ,
            "HANGAR_DATABASE_URL": database_url,
            "HANGAR_REDIS_URL": args.redis_url,
            "HANGAR_REDIS_PREFIX": f"hangar-load-{uuid.uuid4().hex[:8]}",
            "HANGAR_SECRET_KEY": "load-test-secret-" + "x" * 32,
        }
        async with two_servers(env, Path(args.log)) as bases:
            print(f"two servers up: {bases}; {KEYS} keys; waiting for the top of the minute")
            first = await sleep_until_next_minute()
            minutes = [first + i for i in range(args.minutes)]
            results: dict[tuple[int, int], Counter[int]] = defaultdict(Counter)
            latencies: list[float] = []
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
            started = time.monotonic()
            async with httpx.AsyncClient(timeout=30, limits=limits) as client:
                await asyncio.gather(
                    *(
                        drive_key(key, bases, client, minutes, results, latencies, i)
                        for i, key in enumerate(keys)
                    )
                )
            elapsed = time.monotonic() - started

    total: Counter[int] = Counter()
    wrong: list[str] = []
    for i in range(KEYS):
        for minute in minutes:
            counts = results[(i, minute)]
            total.update(counts)
            if counts[200] != LIMIT or any(code >= 500 for code in counts):
                wrong.append(f"key {i} minute {minute}: {dict(counts)}")
    requests = sum(total.values())
    ordered = sorted(latencies)
    print(
        f"elapsed {elapsed:.1f} s over {args.minutes} calendar minutes, {requests} requests "
        f"({requests / elapsed:.0f}/s)"
    )
    print(f"status counts: {dict(sorted(total.items()))}")
    if not latencies:
        print("FAILED: no requests were sent")
        return 1
    granted = [results[(i, m)][200] for i in range(KEYS) for m in minutes]
    print(f"per key per minute: 200s min {min(granted)} max {max(granted)} (expected {LIMIT})")

    def ms(q: float) -> float:
        return 1000 * ordered[min(int(q * len(ordered)), len(ordered) - 1)]

    print(
        f"latency ms: p50 {1000 * statistics.median(ordered):.1f} p95 {ms(0.95):.1f} "
        f"p99 {ms(0.99):.1f} max {ms(1.0):.1f}"
    )
    if wrong:
        print("FAILED:", *wrong[:20], sep="\n  ")
        return 1
    print(f"OK: every key got exactly {LIMIT} per minute from two processes; no 5xx")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="postgresql://root@127.0.0.1:5432/test")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--minutes", type=int, default=2)
    parser.add_argument("--log", default=str(ROOT / "load-serve.log"))
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
