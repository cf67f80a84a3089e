"""A loopback HTTPS webhook receiver for the delivery benchmarks, in its own process.

    python -m bench.receiver --port P --cert C --key K [--delay-ms 10]

Every POST is logged with the time its headers arrived (time.time(), the same clock as the
benchmark's), its path, X-Service-Delivery and the `seq` in its data, and answered after
--delay-ms, or after MS milliseconds for a path that starts with /delay/MS/ (a slow endpoint,
or with MS past the 10 s attempt timeout, one that times out). Paths ending in /fail2 answer
500 to the first two attempts of each delivery.
GET /log returns the log as JSON; GET /health answers ok.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import time
from collections import Counter
from typing import Any

import orjson
from aiohttp import web


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--delay-ms", type=float, default=10.0)
    args = parser.parse_args()
    log: list[list[Any]] = []
    seen: Counter[str] = Counter()
    delay = args.delay_ms / 1000

    async def hook(request: web.Request) -> web.Response:
        arrived = time.time()
        body = await request.read()
        delivery = request.headers.get("X-Service-Delivery", "")
        try:
            seq = orjson.loads(body)["data"].get("seq")
        except (orjson.JSONDecodeError, KeyError, AttributeError, TypeError):
            seq = None
        log.append([arrived, request.path, delivery, seq])
        seen[delivery] += 1
        wait = delay
        if request.path.startswith("/delay/"):
            wait = float(request.path.split("/")[2]) / 1000
        if wait:
            await asyncio.sleep(wait)
        if request.path.endswith("/fail2") and seen[delivery] <= 2:
            return web.Response(status=500, text="failing on purpose")
        return web.Response(text="ok")

    async def get_log(_: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(log), content_type="application/json")

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/log", get_log)
    app.router.add_get("/health", health)
    app.router.add_post("/{tail:.*}", hook)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    web.run_app(
        app,
        host="127.0.0.1",
        port=args.port,
        ssl_context=context,
        print=None,
        access_log=None,
        backlog=1024,
    )


if __name__ == "__main__":
    main()
