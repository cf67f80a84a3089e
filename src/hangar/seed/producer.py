"""Generating rows in a second process while PostgreSQL writes them.

Making and encoding a million rows costs the Python process about as much CPU as PostgreSQL
spends storing them (indexes, foreign-key checks), and the two would otherwise take turns.
So the rows are made by `python -m hangar.seed.producer` and reach the database through the
seed's own connection: the child encodes them in binary COPY format and writes them to its
stdout in frames; the parent forwards the bytes into one COPY inside its transaction. Only
the parent ever talks to the database, so the seed stays one transaction, and a child that
fails or is killed makes the COPY, and with it the whole seed, fail.

A frame is (rows, bytes) as two unsigned int32, then that many bytes; (0, 0) ends the stream.
"""

from __future__ import annotations

import asyncio
import gc
import pickle
import struct
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hangar.seed.binary_copy import HEADER, TRAILER, Encode, encode_rows
from hangar.seed.common import Generated, batched

# About a megabyte of COPY data: small enough that the database starts on the first frame at
# once, large enough that the per-frame cost does not show.
FRAME_ROWS = 5_000
# PostgreSQL checks the rows' foreign keys (up to four a reservation, its costliest work)
# when a COPY statement ends, not as the rows arrive. So the rows go in COPYs of
# STATEMENT_ROWS, and while one statement's checks run, the child makes the next rows into
# a queue of up to QUEUED_FRAMES frames (about 20 MB).
STATEMENT_ROWS = 50_000
QUEUED_FRAMES = 20
_FRAME = struct.Struct("!II")


@dataclass(frozen=True)
class Job:
    """What the parent sends the child on stdin, pickled: the rows and how to encode them."""

    rows: Generated
    encoders: Sequence[Encode]


async def copy_generated(
    driver: Any,
    table: str,
    columns: Sequence[str],
    job: Job,
    advance: Callable[[int], None],
) -> None:
    """COPYs the rows `job` makes, generated and encoded by a child process, into `table` on
    `driver` (an asyncpg connection), calling `advance` with each frame's row count."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        __name__,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    frames: asyncio.Queue[Frame] = asyncio.Queue(QUEUED_FRAMES)
    reading = asyncio.create_task(_read(child, frames))
    try:
        assert child.stdin is not None
        child.stdin.write(pickle.dumps(job))
        await child.stdin.drain()
        child.stdin.close()
        statements = _Statements(frames, advance)
        while not statements.done:
            source = statements.next()
            await driver.copy_to_table(table, source=source, columns=list(columns), format="binary")
        if await child.wait() != 0:
            raise RuntimeError(f"the row generator for {table} failed (exit {child.returncode})")
    finally:
        reading.cancel()
        if child.returncode is None:  # the COPY failed: the rows are no longer wanted
            child.kill()
            await child.wait()


# A frame's (rows, bytes); None once the child has sent them all; or why it stopped short.
Frame = tuple[int, bytes] | None | Exception


async def _read(child: asyncio.subprocess.Process, frames: asyncio.Queue[Frame]) -> None:
    """Moves the child's frames into `frames`, keeping it busy while a COPY ends."""
    assert child.stdout is not None
    while True:
        try:
            rows, size = _FRAME.unpack(await child.stdout.readexactly(_FRAME.size))
            data = await child.stdout.readexactly(size) if rows else b""
        except asyncio.IncompleteReadError:
            code = await child.wait()
            await frames.put(
                RuntimeError(f"the row generator stopped before its end (exit {code})")
            )
            return
        await frames.put((rows, data) if rows else None)
        if not rows:
            return


class _Statements:
    """The frames cut into the sources of successive COPY statements of STATEMENT_ROWS."""

    def __init__(self, frames: asyncio.Queue[Frame], advance: Callable[[int], None]) -> None:
        self._frames = frames
        self._advance = advance
        self.done = False

    async def next(self) -> AsyncIterator[bytes]:
        yield HEADER
        rows = 0
        while rows < STATEMENT_ROWS:
            frame = await self._frames.get()
            if isinstance(frame, Exception):
                raise frame
            if frame is None:
                self.done = True
                break
            yield frame[1]
            self._advance(frame[0])  # asyncpg asks for the next chunk once it has sent this one
            rows += frame[0]
        yield TRAILER


def main() -> None:
    # The child only streams rows out, none of which refers to itself: the cyclic collector
    # would find nothing and costs a tenth of the generating time in passes over them.
    gc.disable()
    job: Job = pickle.load(sys.stdin.buffer)  # noqa: S301 (sent by our own parent process)
    out = sys.stdout.buffer
    for batch in batched(job.rows.rows(), FRAME_ROWS):
        data = encode_rows(job.encoders, batch)
        out.write(_FRAME.pack(len(batch), len(data)))
        out.write(data)
    out.write(_FRAME.pack(0, 0))
    out.flush()


if __name__ == "__main__":
    main()
