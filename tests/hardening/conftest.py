"""Shared pieces of the hardening tests: tripwire listeners, a cuttable TCP proxy, and the
delivery fixtures of tests/webhooks (real loopback HTTPS receivers with trustme)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import insert

from hangar.app import create_app
from hangar.auth import sessions
from hangar.auth.models import UserSession
from hangar.ids import new_id
from hangar.services import Services
from tests.factories import Org
from tests.webhooks.conftest import ca, empty_queue, receiver, sender  # noqa: F401


async def session_for(services: Services, user_id: Any) -> tuple[str, str]:
    """A live session for an existing user, written directly: (cookie token, csrf token).

    Signing in through the API costs two argon2 runs; these tests sign in hundreds of times
    and are not about signing in (test_credentials.py is, and uses the real endpoint).
    """
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    now = services.clock.now()
    async with services.engine.begin() as conn:
        await conn.execute(
            insert(UserSession).values(
                id=new_id(),
                token_hash=hashlib.sha256(token.encode()).hexdigest(),
                user_id=user_id,
                csrf_token=csrf,
                created_at=now,
                last_seen_at=now,
                expires_at=now + sessions.ABSOLUTE_TIMEOUT,
            )
        )
    return token, csrf


@asynccontextmanager
async def signed_in_as(services: Services, user_id: Any) -> AsyncIterator[httpx.AsyncClient]:
    token, csrf = await session_for(services, user_id)
    transport = httpx.ASGITransport(app=create_app(services), raise_app_exceptions=False)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="https://hangar.example",
        cookies={sessions.COOKIE: token},
        headers={"X-CSRF-Token": csrf},
    ) as client:
        yield client


@pytest.fixture
async def admin(services: Services, org: Org) -> AsyncIterator[httpx.AsyncClient]:
    """The organization's own admin (made by make_org), signed in cheaply."""
    async with signed_in_as(services, org.admin_id) as client:
        yield client


@dataclass
class Listener:
    """A plain TCP listener on loopback (IPv4 and IPv6) that counts every connection."""

    port4: int = 0
    port6: int = 0
    connections: list[tuple[str, int]] = field(default_factory=list)
    servers: list[asyncio.Server] = field(default_factory=list)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        self.connections.append((str(peer[0]), int(peer[1])))
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()

    async def start(self) -> None:
        v4 = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.servers.append(v4)
        self.port4 = v4.sockets[0].getsockname()[1]
        with contextlib.suppress(OSError):  # no IPv6 loopback on this machine
            v6 = await asyncio.start_server(self._accept, "::1", 0, family=socket.AF_INET6)
            self.servers.append(v6)
            self.port6 = v6.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        for server in self.servers:
            server.close()
            await server.wait_closed()


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    state = Listener()
    await state.start()
    yield state
    await state.stop()


SockConnect = Callable[[socket.socket, Any], Awaitable[None]]


@dataclass
class Tripwire:
    """Every outgoing connection this event loop makes is recorded and sent to the listener.

    Whatever address a sender chooses (10.0.0.1, 169.254.169.254, ::1, ...), if it ever
    tries to connect, the attempt lands on the test's loopback listener and is counted.
    """

    listener: Listener
    original: SockConnect
    attempts: list[Any] = field(default_factory=list)

    async def sock_connect(self, sock: socket.socket, address: Any) -> None:
        if address[1] in infrastructure_ports():  # the test database and Redis, not targets
            await self.original(sock, address)
            return
        self.attempts.append(address)
        if sock.family == socket.AF_INET6:
            target: tuple[Any, ...] = ("::1", self.listener.port6, 0, 0)
        else:
            target = ("127.0.0.1", self.listener.port4)
        await self.original(sock, target)


def infrastructure_ports() -> set[int]:
    ports = set()
    for variable, default in (
        ("HANGAR_TEST_DATABASE_URL", 5432),
        ("HANGAR_TEST_REDIS_URL", 6379),
    ):
        if url := os.environ.get(variable):
            ports.add(urlsplit(url).port or default)
    return ports


@pytest.fixture
async def tripwire(listener: Listener, monkeypatch: pytest.MonkeyPatch) -> Tripwire:
    loop = asyncio.get_running_loop()
    wire = Tripwire(listener, loop.sock_connect)
    monkeypatch.setattr(loop, "sock_connect", wire.sock_connect)
    return wire


class TcpProxy:
    """A TCP proxy on a fixed loopback port that a test can cut and restore.

    Cutting stops accepting and resets every open connection, as a stopped server or a
    broken network would; restoring listens again on the same port.
    """

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))
        pipes = [
            asyncio.create_task(self._pipe(reader, up_writer)),
            asyncio.create_task(self._pipe(up_reader, writer)),
        ]
        self._tasks.update(pipes)
        await asyncio.gather(*pipes, return_exceptions=True)
        self._tasks.difference_update(pipes)
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.close()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for w in list(self._writers):
            transport = w.transport
            with contextlib.suppress(Exception):
                transport.abort()  # type: ignore[attr-defined]
        self._writers.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.sleep(0)

    async def restore(self) -> None:
        await self.start()

    async def close(self) -> None:
        await self.cut()
