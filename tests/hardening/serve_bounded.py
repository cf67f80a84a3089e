"""A real hangar server for tests/hardening/test_http_bounds.py, run in a process of its own.

    python -m tests.hardening.serve_bounded prepare KEYS
        migrates the database of HANGAR_DATABASE_URL, creates an organization and KEYS API
        keys with read:aircraft, and prints {"org", "keys"}
    python -m tests.hardening.serve_bounded serve PORT HEAD_S BODY_S KEEP_ALIVE_S MAX_CONCURRENCY
        `hangar serve --no-worker` (hangar.cli.run_server: the production protocol, body
        limits and uvicorn options), except that the timeouts and the connection cap are the
        ones given, so that a test need not wait the production ten seconds

Not a test module: nothing imports it.
"""

from __future__ import annotations

import sys
from typing import Any

from hangar import cli
from hangar.auth.commands import issue_key
from hangar.clock import SystemClock
from hangar.http_limits import ServerLimits
from hangar.orgs.commands import create_org


def prepare(keys: int) -> None:
    current = cli.migrated_settings()
    now = SystemClock().now()

    async def work(conn: Any) -> dict[str, Any]:
        org_id = await create_org(conn, "Bounded Aero", now)
        issued = [
            await issue_key(conn, org_id, name=f"client {i}", scopes=["read:aircraft"], now=now)
            for i in range(keys)
        ]
        return {"org": str(org_id), "keys": [k.key for k in issued]}

    cli.emit(cli.run_in_transaction(current, work))


def serve(port: str, head_s: str, body_s: str, keep_alive_s: str, max_concurrency: str) -> None:
    limits = ServerLimits(
        head_timeout_s=float(head_s),
        body_timeout_s=float(body_s),
        keep_alive_timeout_s=int(keep_alive_s),
        max_concurrency=int(max_concurrency),
    )
    cli.run_server(
        cli.migrated_settings(), "127.0.0.1", int(port), with_worker=False, limits=limits
    )


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "prepare":
        prepare(int(args[0]))
    else:
        serve(*args)
