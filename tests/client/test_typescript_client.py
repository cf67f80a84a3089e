"""The TypeScript client (clients/typescript, npm `hangar-client`), built and tested with node
against a live hangar: its dependencies installed from its package-lock.json (`npm ci`, redone
only when the lock changes), `npm run build` (tsc, strict), then `node --test` on its tests,
given the server's address, keys and expected rows in a fixture file.

The live server runs on the test's FakeClock: the client's waits (a 429's minute) are made by
moving that clock through a small control endpoint, never by waiting. Two organizations are
seeded; the node tests check that the second one's rows never show. The delivery they verify
is signed by hangar's own signing code.

Also: the checked-in types (src/schema.ts) are what openapi-typescript makes of the live
OpenAPI document (so they cannot drift), and scripts/openapi_json.py prints that document.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from scripts.openapi_json import document
from sqlalchemy import select

from hangar.fleet.models import Aircraft
from hangar.kit.container import Services
from hangar.kit.scopes import SCOPES
from hangar.maintenance.models import MaintenanceLog, WorkOrder
from hangar.orgs.models import Membership, Organization
from hangar.reservations.models import Reservation
from hangar.squawks.models import Squawk
from hangar.webhooks.delivery import signing
from hangar.webhooks.models import Event
from tests.fixtures.actions import url
from tests.fixtures.all_events import fire_everything
from tests.fixtures.clients import signed_in_client
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock, FakeResolver
from tests.fixtures.live_server import LiveServer
from tests.fixtures.locked_tools import NPM, NPM_ENV, npm_typescript_client

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
NODE = shutil.which("node")
SECRET = "5e" * 32  # the subscription's secret in the signed delivery
PREVIOUS_SECRET = "0a" * 32  # and the one before its rotation (the grace still runs)

needs_node = pytest.mark.skipif(
    NODE is None, reason="node is not installed: the TypeScript client is not built or run"
)
# The first run on a machine installs the client's pinned packages (npm ci, about 20 s) and
# compiles it twice (src, then src with the tests); the node tests themselves take a few
# seconds. Past the suite's 60 s on a loaded 2-core machine.
takes_minutes = pytest.mark.timeout(300)


@contextmanager
def _exclusive() -> Iterator[None]:
    """One install and build of clients/typescript at a time: parallel test workers (and
    runs of the same checkout) share its node_modules, dist and build."""
    tag = hashlib.sha256(str(CLIENT).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"hangar-ts-client-{tag}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        yield


def _run(args: list[str], env: dict[str, str] | None = None, timeout: float = 240) -> str:
    done = subprocess.run(  # noqa: S603 (fixed tools, no shell)
        args,
        cwd=CLIENT,
        env={**os.environ, **NPM_ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = f"{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, f"{' '.join(args)} failed (exit {done.returncode}):\n{output}"
    return output


def _built() -> None:
    assert NPM is not None, "node is installed but npm is not: the client cannot be built"
    with _exclusive():
        npm_typescript_client()
        _run([NPM, "run", "build"])


class Control:
    """http://127.0.0.1:{port}/advance?ms=N moves the server's FakeClock N ms on and answers
    the new time: the client's injected `sleep` in the node tests."""

    def __init__(self, clock: FakeClock) -> None:
        moved = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                with moved:
                    clock.advance(milliseconds=float(query["ms"][0]))
                    now = clock.now().isoformat()
                answer = now.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Control:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def clocked_server(database_url: str, clock: FakeClock) -> Iterator[LiveServer]:
    """A live server on the test's clock (the API and screens only)."""
    server = LiveServer(database_url, sender=None, resolver=FakeResolver(), clock=clock)
    server.start()
    yield server
    server.stop()


async def _ids(org: Org, model: Any, **where: Any) -> list[str]:
    column = model.user_id if model is Membership else model.id
    query = select(column).where(model.org_id == org.id, model.deleted_at.is_(None))
    for name, value in where.items():
        query = query.where(getattr(model, name) == value)
    async with org.engine.connect() as conn:
        return [str(found) for found in (await conn.scalars(query)).all()]


async def _rows(org: Org) -> dict[str, Any]:
    """What the organization's key must read, by the database."""
    async with org.engine.connect() as conn:
        events = (
            await conn.execute(
                select(Event.id, Event.name, Event.data).where(Event.org_id == org.id)
            )
        ).all()
        name = await conn.scalar(select(Organization.name).where(Organization.id == org.id))
    return {
        "id": str(org.id),
        "name": name,
        "admin_id": str(org.admin_id),
        "aircraft": await _ids(org, Aircraft),
        "reservations": await _ids(org, Reservation),
        "cancelled": await _ids(org, Reservation, status="cancelled"),
        "squawks": await _ids(org, Squawk),
        "maintenance_logs": await _ids(org, MaintenanceLog),
        "work_orders": await _ids(org, WorkOrder),
        "members": await _ids(org, Membership),
        "events": [
            {"id": str(row.id), "event": row.name, "data": json.loads(row.data)} for row in events
        ],
    }


async def _seed(
    services: Services, clock: FakeClock, admin: httpx.AsyncClient, org: Org, other: Org
) -> None:
    """Every kind of row for `org` (and every one of the 13 events, fired by the product's
    actions), and rows and an event of `other`, which must never show."""
    await fire_everything(admin, org, clock)
    plane = (await org.add(Aircraft, tail_number="N42TS"))["id"]
    for _ in range(5):
        await org.add(Reservation, aircraft_id=plane)
    await org.add(Squawk, aircraft_id=plane)
    await org.add(MaintenanceLog, aircraft_id=plane)
    await org.add(WorkOrder, aircraft_id=plane)
    theirs = (await other.add(Aircraft, tail_number="N13OT"))["id"]
    await other.add(Reservation, aircraft_id=theirs)
    await other.add(MaintenanceLog, aircraft_id=theirs)
    await other.add(WorkOrder, aircraft_id=theirs)
    async with signed_in_client(services, other, "admin") as their_admin:
        squawk = {"aircraft_id": str(theirs), "description": "Other's", "severity": "minor"}
        made = await their_admin.post(url(other, "squawks"), json=squawk)
        assert made.status_code == 201, made.text


async def _delivery(org: Org, clock: FakeClock) -> dict[str, Any]:
    """A delivery of the organization's squawk.created, as hangar's sender signs it during a
    secret's rotation: the body, headers and the time it was signed."""
    async with org.engine.connect() as conn:
        data = await conn.scalar(
            select(Event.data).where(Event.org_id == org.id, Event.name == "squawk.created")
        )
    assert data is not None
    body = signing.envelope("squawk.created", clock.now(), data)
    headers = signing.headers(
        "squawk.created",
        "delivery-ts-1",
        SECRET,
        body,
        event_id="event-ts-1",
        sent_at=clock.now(),
        previous_secret=PREVIOUS_SECRET,
        org_id=str(org.id),
    )
    return {
        "secret": SECRET,
        "previous_secret": PREVIOUS_SECRET,
        "body": body.decode(),
        "headers": headers,
        "signed_at": clock.now().isoformat(),
    }


@needs_node
@takes_minutes
async def test_the_typescript_client_against_a_live_hangar(
    clocked_server: LiveServer,
    services: Services,
    clock: FakeClock,
    admin: httpx.AsyncClient,
    org: Org,
    other: Org,
    tmp_path: Path,
) -> None:
    await asyncio.to_thread(_built)
    await _seed(services, clock, admin, org, other)
    everything_but_members = [s for s in SCOPES if not s.startswith("read:members")]
    fixture = {
        "url": clocked_server.url,
        "now": clock.now().isoformat(),
        "keys": {
            "all": org.key,
            "no_members": await org.key_with(*everything_but_members),
            "rate": await org.key_with("read:aircraft"),
            "other": other.key,
        },
        "org": await _rows(org),
        "other": await _rows(other),
        "delivery": await _delivery(org, clock),
    }
    (tmp_path / "fixture.json").write_text(json.dumps(fixture))
    with Control(clock) as control:
        env = {"HANGAR_TEST_FIXTURE": str(tmp_path / "fixture.json"), "HANGAR_CONTROL": control.url}
        output = await asyncio.to_thread(_run, [NPM or "npm", "test"], env)
    # The live tests ran (not skipped for want of the fixture), and nothing failed.
    assert "# fail 0" in output, output
    assert re.search(r"^ok \d+ - a live hangar$", output, re.M), output


@needs_node
@takes_minutes
async def test_the_checked_in_types_are_what_the_openapi_document_generates(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """`npm run check-schema`: openapi-typescript (pinned) run on the document the app serves
    gives src/schema.ts byte for byte, so a change of the API without `npm run generate`
    fails here."""
    served = await client.get("/api/v1/external/openapi.json")
    assert served.status_code == 200
    (tmp_path / "openapi.json").write_bytes(served.content)
    await asyncio.to_thread(_exclusive_install)
    output = await asyncio.to_thread(
        _run,
        [NPM or "npm", "run", "check-schema"],
        {"HANGAR_OPENAPI": str(tmp_path / "openapi.json")},
    )
    assert "src/schema.ts matches the OpenAPI document" in output


def _exclusive_install() -> None:
    assert NPM is not None, "node is installed but npm is not: the client cannot be built"
    with _exclusive():
        npm_typescript_client()


async def test_the_script_prints_the_document_the_app_serves(
    client: httpx.AsyncClient, services: Services
) -> None:
    """scripts/openapi_json.py (what `npm run generate` reads) builds the same document as the
    server, without one."""
    served = (await client.get("/api/v1/external/openapi.json")).json()
    assert await document(services.settings.public_url) == served


async def test_docs_show_the_typescript_client_beside_the_python_one(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/docs")
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert 'href="#typescript-client"' in page.text
    assert text.index('id="python-client"') < text.index('id="typescript-client"')
    assert "npm install ./clients/typescript" in text
    assert "verifyDelivery(secret, body, headers)" in text
    readme = (CLIENT / "README.md").read_text()
    assert "npm install ./clients/typescript" in readme
