"""Hostile clients (G12b, G12c, G12d): a well-behaved client's latency while another address
floods the server, against the same client's latency with the server quiet, in alternating
phases.

The well-behaved client runs in the bench process, from 127.0.0.1: one keep-alive connection,
one `GET /api/health` every 10 ms (the issue measured that route; a keyed route would meet
the key's own 60/min limit), each timed from the request's first byte written to its
answer's last byte read. The hostile client is a process of its own, from 127.0.0.2 (so the
server sees another client address: 127.0.0.1 is a trusted proxy by default, and its
requests would be taken as the client they name):

    python -m bench.hostile flood '{"kind": "bodies", "port": P, "path": ..., "seconds": S}'
    python -m bench.hostile flood '{"kind": "sign-in", "port": P, "seconds": S}'
    python -m bench.hostile flood '{"kind": "huge-head", "port": P, "seconds": S}'

- `bodies` (G12b): CONNS connections, each POSTing a 1,000,000-byte JSON body (under the
  largest cap, 1 MiB) with no session to the path, reading the answer, dropping the
  connection and starting again, back to back;
- `sign-in` (G12c): CONNS keep-alive connections, each POSTing `/api/session` with a random
  email and a wrong password back to back (a new connection whenever the server closes one);
  with `"rate": R`, R attempts a second in all instead.

The attacks of tests/hardening/test_http_bounds.py (G12d), each connection one misbehaving
client that starts again as soon as it is done (or, with a `"rate"`, paced as above):

- `huge-head`: an 8 MB header, sent in 64 KB writes until the server answers (431) or stops
  reading;
- `huge-body`: a POST to `/api/session` declaring a 50 MB body, sent in 64 KB writes until
  the server answers (413, before the body) or stops reading;
- `slowloris`: a request line, then a header line every 0.25 s, until the server answers
  (408 at its head timeout) or closes;
- `idle`: a connection that sends nothing, until the server closes it (at its head timeout).

A slowloris or idle connection still open at the deadline counts as "held".

`"body_bytes"` sets the size of the `bodies` flood's bodies (the contrast row's are small).

It prints `started` once it is flooding, then, at its deadline, one JSON line: the answers
by status, the connections lost before an answer, and the bytes of body it wrote (G12d's
floods: every byte). Both clients speak HTTP/1.1 over plain asyncio streams: cheap, so that on
a small machine the flood's own CPU takes as little as it can from the server it loads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import secrets
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER = "127.0.0.1"
WELL_BEHAVED = "127.0.0.1"
HOSTILE = "127.0.0.2"
HEALTH = "/api/health"
INTERVAL_S = 0.01  # the well-behaved client's pace: one request every 10 ms
BODY_BYTES = 1_000_000
CONNS = 4
ANSWER_TIMEOUT_S = 10.0
MB = 1024 * 1024
CHUNK = b"a" * 65536
SLOWLORIS_EVERY_S = 0.25


def maintenance_body(size: int = BODY_BYTES) -> bytes:
    """A maintenance log entry's JSON of exactly `size` bytes (its work_performed padded)."""
    start = b'{"aircraft_id": "00000000-0000-0000-0000-000000000000", "work_performed": "'
    end = b'"}'
    return start + b"x" * (size - len(start) - len(end)) + end


def _head(method: str, path: str, port: int, body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {SERVER}:{port}", "User-Agent: hangar-bench"]
    if body or method == "POST":
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Reads one answer whole: (its status, whether it closes the connection)."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    length = 0
    close = False
    for line in head[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "connection" and value.strip().lower() == "close":
            close = True
    if length:
        await reader.readexactly(length)
    return status, close


async def _connect(port: int, source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(SERVER, port, local_addr=(source, 0))


# --- The well-behaved client ----------------------------------------------------------------


@dataclass
class Timed:
    ms: list[float] = field(default_factory=list)
    errors: int = 0  # answers other than 200, and requests lost


async def well_behaved(port: int, seconds: float, path: str = HEALTH) -> Timed:
    """`GET path` every INTERVAL_S for `seconds`, one at a time on a keep-alive connection;
    (re)connecting is not timed."""
    timed = Timed()
    request = _head("GET", path, port)
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    deadline = time.monotonic() + seconds
    next_at = time.monotonic()
    try:
        while (now := time.monotonic()) < deadline:
            if next_at > now:
                await asyncio.sleep(next_at - now)
            next_at = max(next_at + INTERVAL_S, time.monotonic())
            if conn is None:
                conn = await _connect(port, WELL_BEHAVED)
            reader, writer = conn
            started = time.perf_counter()
            try:
                writer.write(request)
                status, close = await asyncio.wait_for(read_answer(reader), ANSWER_TIMEOUT_S)
            except (OSError, asyncio.IncompleteReadError, TimeoutError):
                timed.errors += 1
                writer.transport.abort()
                conn = None
                continue
            timed.ms.append((time.perf_counter() - started) * 1000)
            if status != 200:
                timed.errors += 1
            if close:
                writer.transport.abort()
                conn = None
    finally:
        if conn is not None:
            conn[1].transport.abort()
    return timed


# --- The hostile client (its own process) ---------------------------------------------------


@dataclass
class Flood:
    """What a hostile client did in one phase."""

    seconds: float
    answers: dict[str, int]  # by status; "lost" when the connection ended before an answer
    body_bytes: int  # bytes of request body handed to the socket (G12d's floods: every byte)
    cpu_s: float  # the hostile client's own CPU time (user + system)

    @property
    def requests(self) -> int:
        return sum(self.answers.values())


async def _bodies(
    port: int, path: str, size: int, every_s: float, deadline: float, counts: Counter[str]
) -> int:
    """Bodies back to back, or one every `every_s` when that is more than 0."""
    body = maintenance_body(size)
    request = _head("POST", path, port, body) + body
    written = 0
    next_at = time.monotonic()
    while (now := time.monotonic()) < deadline:
        if every_s:
            if next_at > now:
                await asyncio.sleep(next_at - now)
                continue  # the deadline may have passed meanwhile
            next_at = max(next_at + every_s, now)
        try:
            reader, writer = await _connect(port, HOSTILE)
        except OSError:
            counts["connect failed"] += 1
            await asyncio.sleep(0.01)
            continue
        try:
            writer.write(request)
            written += len(body)
            status, _ = await asyncio.wait_for(read_answer(reader), ANSWER_TIMEOUT_S)
            counts[str(status)] += 1
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            counts["lost"] += 1
        finally:
            # Whatever of the body the server did not take is dropped, as an attacker would.
            writer.transport.abort()
    return written


async def _keep_alive(
    port: int,
    every_s: float,
    deadline: float,
    counts: Counter[str],
    request: Callable[[], tuple[bytes, bytes]],
) -> int:
    """`request()` (head and body) back to back on a keep-alive connection, or one every
    `every_s` when that is more than 0; a new connection whenever the server closes one."""
    written = 0
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    next_at = time.monotonic()
    try:
        while (now := time.monotonic()) < deadline:
            if every_s:
                if next_at > now:
                    await asyncio.sleep(next_at - now)
                    continue  # the deadline may have passed meanwhile
                next_at = max(next_at + every_s, now)
            if conn is None:
                try:
                    conn = await _connect(port, HOSTILE)
                except OSError:
                    counts["connect failed"] += 1
                    await asyncio.sleep(0.01)
                    continue
            reader, writer = conn
            head, body = request()
            try:
                writer.write(head + body)
                written += len(body)
                status, close = await asyncio.wait_for(read_answer(reader), ANSWER_TIMEOUT_S)
                counts[str(status)] += 1
            except (OSError, asyncio.IncompleteReadError, TimeoutError):
                counts["lost"] += 1
                close = True
            if close:
                writer.transport.abort()
                conn = None
    finally:
        if conn is not None:
            conn[1].transport.abort()
    return written


async def _connections(
    every_s: float, deadline: float, counts: Counter[str], one: Callable[[], Awaitable[int]]
) -> int:
    """`one()` (a connection, start to end: the bytes it wrote; OSError if it could not
    connect) back to back, or one every `every_s` when that is more than 0."""
    written = 0
    next_at = time.monotonic()
    while (now := time.monotonic()) < deadline:
        if every_s:
            if next_at > now:
                await asyncio.sleep(next_at - now)
                continue  # the deadline may have passed meanwhile
            next_at = max(next_at + every_s, now)
        try:
            written += await one()
        except OSError:
            counts["connect failed"] += 1
            await asyncio.sleep(0.01)
    return written


def _huge_head(port: int) -> Iterator[bytes]:
    yield f"GET {HEALTH} HTTP/1.1\r\nHost: {SERVER}:{port}\r\nX-Padding: ".encode()
    for _ in range(8 * MB // len(CHUNK)):
        yield CHUNK
    yield b"\r\n\r\n"


def _huge_body(port: int) -> Iterator[bytes]:
    yield (
        f"POST /api/session HTTP/1.1\r\nHost: {SERVER}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {50 * MB}\r\n\r\n"
    ).encode()
    for _ in range(50 * MB // len(CHUNK)):
        yield CHUNK


async def _until_answered(port: int, parts: Iterator[bytes], counts: Counter[str]) -> int:
    """One connection: `parts` written until the server answers or stops reading, and its
    answer counted. A bare socket, not a stream: the server refuses and closes with our bytes
    still arriving, so a write meets its reset, and a stream's transport then stops reading
    and drops the answer it has already received."""
    loop = asyncio.get_running_loop()
    with socket.socket() as sock:
        sock.setblocking(False)
        sock.bind((HOSTILE, 0))
        await loop.sock_connect(sock, (SERVER, port))
        answer = asyncio.create_task(loop.sock_recv(sock, 65536))
        written = 0
        with contextlib.suppress(OSError, TimeoutError):  # closed, or reads no more
            for part in parts:
                if answer.done():
                    break
                await asyncio.wait_for(loop.sock_sendall(sock, part), ANSWER_TIMEOUT_S)
                written += len(part)
        try:
            head = await asyncio.wait_for(answer, ANSWER_TIMEOUT_S)
        except (OSError, TimeoutError):
            head = b""
    counts[head[9:12].decode() if head.startswith(b"HTTP/1.1 ") else "lost"] += 1
    return written


async def _drip(port: int, first: bytes, line: bytes, deadline: float, counts: Counter[str]) -> int:
    """One connection: `first`, then `line` every SLOWLORIS_EVERY_S (nothing more if it is
    empty), until the server answers or closes, or the deadline ("held")."""
    reader, writer = await _connect(port, HOSTILE)
    answer = asyncio.create_task(read_answer(reader))
    writer.write(first)
    written = len(first)
    try:
        while not answer.done() and (left := deadline - time.monotonic()) > 0:
            await asyncio.wait({answer}, timeout=min(SLOWLORIS_EVERY_S, left) if line else left)
            if line and not answer.done():
                writer.write(line)
                written += len(line)
        if not answer.done():
            answer.cancel()
            counts["held"] += 1
        else:
            try:
                status, _ = answer.result()
                counts[str(status)] += 1
            except (OSError, asyncio.IncompleteReadError):
                counts["lost"] += 1
    finally:
        writer.transport.abort()
    return written


async def flood(
    kind: str,
    port: int,
    seconds: float,
    path: str = "",
    conns: int = CONNS,
    body_bytes: int = BODY_BYTES,
    rate: float = 0.0,
) -> Flood:
    """`conns` connections of the `kind` of flood for `seconds`: back to back, or, with a
    `rate`, that many requests a second in all."""
    counts: Counter[str] = Counter()
    began = time.monotonic()
    deadline = began + seconds
    every_s = conns / rate if rate else 0.0
    if kind == "bodies":
        workers = [_bodies(port, path, body_bytes, every_s, deadline, counts) for _ in range(conns)]
    elif kind == "sign-in":

        def sign_in() -> tuple[bytes, bytes]:
            email = f"{secrets.token_hex(8)}@example.com"
            body = json.dumps({"email": email, "password": "not-the-password"}).encode()
            return _head("POST", "/api/session", port, body), body

        workers = [_keep_alive(port, every_s, deadline, counts, sign_in) for _ in range(conns)]
    elif kind == "benign":
        # The control: the same connections at the same rate, asking what the well-behaved
        # client asks. What a flood costs others beyond it is the flood's hostility.
        health = _head("GET", HEALTH, port)
        workers = [
            _keep_alive(port, every_s, deadline, counts, lambda: (health, b""))
            for _ in range(conns)
        ]
    elif kind in ("huge-head", "huge-body"):
        parts = _huge_head if kind == "huge-head" else _huge_body

        def huge() -> Awaitable[int]:
            return _until_answered(port, parts(port), counts)

        workers = [_connections(every_s, deadline, counts, huge) for _ in range(conns)]
    elif kind in ("slowloris", "idle"):
        # Each holds its connection to the deadline unless the server ends it (then another
        # takes its place): a phase is shorter than the production head timeout, 10 s.
        first, line = f"GET {HEALTH} HTTP/1.1\r\n".encode(), b"X-A: b\r\n"
        if kind == "idle":
            first, line = b"", b""

        def slow() -> Awaitable[int]:
            return _drip(port, first, line, deadline, counts)

        workers = [_connections(every_s, deadline, counts, slow) for _ in range(conns)]
    else:
        raise ValueError(f"unknown flood {kind!r}")
    print("started", flush=True)
    written = await asyncio.gather(*workers)
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = used.ru_utime + used.ru_stime
    return Flood(time.monotonic() - began, dict(counts), sum(written), cpu_s)


def main() -> None:
    if sys.argv[1:2] != ["flood"] or len(sys.argv) != 3:
        raise SystemExit("usage: python -m bench.hostile flood SPEC")
    spec = json.loads(sys.argv[2])
    done = asyncio.run(
        flood(
            spec["kind"],
            spec["port"],
            spec["seconds"],
            spec.get("path", ""),
            spec["conns"],
            spec.get("body_bytes", BODY_BYTES),
            spec.get("rate", 0.0),
        )
    )
    print(
        json.dumps(
            {
                "seconds": done.seconds,
                "answers": done.answers,
                "bytes": done.body_bytes,
                "cpu_s": done.cpu_s,
            }
        )
    )


# --- Phases, from the bench process ---------------------------------------------------------


@dataclass
class Usage:
    """What the server process used over some phases: to tell what the latency waited for."""

    wall_s: float = 0.0
    cpu_s: float = 0.0  # user + system, every thread (the hashing threads too)
    read_bytes: int = 0  # /proc/PID/io rchar: every read, sockets and files

    @property
    def cpu_share(self) -> float:
        """CPU time per second of wall time: 1.0 is one core kept busy."""
        return self.cpu_s / self.wall_s if self.wall_s else 0.0


def _snapshot(pid: int) -> tuple[float, float, int]:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rchar = 0
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            rchar = int(line.split()[1])
    return time.monotonic(), cpu_s, rchar


def _add(into: Usage, before: tuple[float, float, int], after: tuple[float, float, int]) -> None:
    into.wall_s += after[0] - before[0]
    into.cpu_s += after[1] - before[1]
    into.read_bytes += after[2] - before[2]


@dataclass
class Phases:
    quiet: Timed = field(default_factory=Timed)
    hostile: Timed = field(default_factory=Timed)
    floods: list[Flood] = field(default_factory=list)
    server_quiet: Usage = field(default_factory=Usage)
    server_hostile: Usage = field(default_factory=Usage)

    @property
    def answers(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for f in self.floods:
            total.update(f.answers)
        return total

    @property
    def flood_seconds(self) -> float:
        return sum(f.seconds for f in self.floods)

    @property
    def flood_bytes(self) -> int:
        return sum(f.body_bytes for f in self.floods)

    @property
    def flood_cpu_share(self) -> float:
        seconds = self.flood_seconds
        return sum(f.cpu_s for f in self.floods) / seconds if seconds else 0.0


def _extend(into: Timed, more: Timed) -> None:
    into.ms += more.ms
    into.errors += more.errors


def _hostile_phase(
    port: int, pid: int, spec: dict[str, Any], seconds: float, usage: Usage
) -> tuple[Timed, Flood]:
    """The well-behaved client for `seconds` while a flood runs (from just before to just
    after); what the server used while the flood ran is added to `usage`."""
    spec = {**spec, "port": port, "seconds": seconds + 0.5}
    proc = subprocess.Popen(  # noqa: S603 (our own module and arguments)
        [sys.executable, "-m", "bench.hostile", "flood", json.dumps(spec)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "started":
            raise RuntimeError("the hostile client did not start")
        before = _snapshot(pid)
        time.sleep(0.2)  # let the flood get going
        timed = asyncio.run(well_behaved(port, seconds))
        out, _ = proc.communicate(timeout=seconds + 30)
        _add(usage, before, _snapshot(pid))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"the hostile client exited {proc.returncode}")
    data = json.loads(out.strip().splitlines()[-1])
    return timed, Flood(data["seconds"], data["answers"], data["bytes"], data["cpu_s"])


def phases(
    port: int, pid: int, spec: dict[str, Any], *, rounds: int, seconds: float, warm_up: bool
) -> Phases:
    """Quiet (or control) and hostile phases of `seconds`, alternating (ABBA: neither always
    first), on the server listening on `port` as process `pid`."""
    if warm_up:
        asyncio.run(well_behaved(port, 1.0))
    found = Phases()
    spec = {"conns": CONNS, **spec}
    # A flood at a rate is compared with the same connections at the same rate asking what
    # the well-behaved client asks (`benign`): on a 2-core machine any second client costs
    # the first some scheduling, and that is not the flood's doing. Flat out, with nothing.
    control = {**spec, "kind": "benign"} if spec.get("rate") else None
    for i in range(rounds):
        for hostile in (False, True) if i % 2 == 0 else (True, False):
            if hostile:
                timed, done = _hostile_phase(port, pid, spec, seconds, found.server_hostile)
                _extend(found.hostile, timed)
                found.floods.append(done)
            elif control is not None:
                timed, _ = _hostile_phase(port, pid, control, seconds, found.server_quiet)
                _extend(found.quiet, timed)
            else:
                before = _snapshot(pid)
                _extend(found.quiet, asyncio.run(well_behaved(port, seconds)))
                _add(found.server_quiet, before, _snapshot(pid))
    return found


if __name__ == "__main__":
    main()
