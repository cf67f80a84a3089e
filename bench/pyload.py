"""A bounded aiohttp load generator, used when wrk is not installed.

    python -m bench.pyload '{"url": ..., "headers": {...}, "seconds": 2, "conns": 8}'

Prints {"rps", "p50", "p99", "errors"} as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aiohttp


async def _main(url: str, headers: dict[str, str], seconds: float, conns: int) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def one(session: aiohttp.ClientSession) -> None:
        nonlocal errors
        while time.monotonic() < deadline:
            started = time.perf_counter()
            async with session.get(url, headers=headers) as response:
                await response.read()
                if response.status >= 400:
                    errors += 1
            latencies.append((time.perf_counter() - started) * 1000)

    connector = aiohttp.TCPConnector(limit=conns)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        began = time.monotonic()
        await asyncio.gather(*(one(session) for _ in range(conns)))
        elapsed = time.monotonic() - began
    latencies.sort()
    n = len(latencies)
    return {
        "rps": n / elapsed,
        "p50": latencies[n // 2] if n else 0.0,
        "p99": latencies[min(n - 1, int(n * 0.99))] if n else 0.0,
        "errors": errors,
    }


def main() -> None:
    spec = json.loads(sys.argv[1])
    result = asyncio.run(_main(spec["url"], spec["headers"], spec["seconds"], spec["conns"]))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
