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
    try:
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.write(pickle.dumps(job))
        await child.stdin.drain()
        child.stdin.close()
        source = _frames(child.stdout, advance, child)
        await driver.copy_to_table(table, source=source, columns=list(columns), format="binary")
        if await child.wait() != 0:
            raise RuntimeError(f"the row generator for {table} failed (exit {child.returncode})")
    finally:
        if child.returncode is None:  # the COPY failed: the rows are no longer wanted
            child.kill()
            await child.wait()


async def _frames(
    stream: asyncio.StreamReader, advance: Callable[[int], None], child: asyncio.subprocess.Process
) -> AsyncIterator[bytes]:
    yield HEADER
    while True:
        try:
            rows, size = _FRAME.unpack(await stream.readexactly(_FRAME.size))
            data = await stream.readexactly(size) if rows else b""
        except asyncio.IncompleteReadError:
            code = await child.wait()
            raise RuntimeError(f"the row generator stopped before its end (exit {code})") from None
        if not rows:
            break
        yield data
        advance(rows)  # asyncpg asks for the next chunk once it has sent this one
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
