"""Password hashing with argon2id (the library's current recommended parameters), and the
bound on how many hashes a process runs at once.

Each hash takes 64 MiB and most of a core for a few tens of milliseconds, on purpose: that
is what makes a stolen hash slow to guess. It also makes the sign-in form the cheapest way
to load the server, since anyone may post to it. So hashes run on threads of their own,
`SLOTS` at a time per process; a request waits for a slot at most `WAIT_S`, and is then
refused (`Busy`, a 429) rather than queued without end. However many sign-ins arrive at once,
hashing holds at most SLOTS x 64 MiB and SLOTS threads, and the event loop keeps serving
everything else.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from hangar.kit.errors import RateLimited

_hasher = PasswordHasher()
_T = TypeVar("_T")

# Two at once: on a 2-core machine, a flood of sign-ins leaves the serving process the
# event loop's share; `hangar serve --workers auto` gives each process its own two.
SLOTS = 2
# A person signing in while others do waits a moment, not the length of a flood.
WAIT_S = 2.0
# Past this many waiting, a request is refused at once: it could not get a slot within
# WAIT_S anyway (each hash takes some 50 ms; 64 waiting are a second and a half of work).
MAX_WAITING = 64


class Busy(RateLimited):
    """Every hashing slot is taken, and stayed taken for WAIT_S: a 429 to try again in a
    moment."""

    def __init__(self) -> None:
        super().__init__("Too many sign-ins at once; try again in a moment", retry_after=1)


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


_pool = ThreadPoolExecutor(max_workers=SLOTS, thread_name_prefix="argon2")
_waiting = 0
_waiting_lock = threading.Lock()


async def _bounded(work: Callable[[], _T]) -> _T:
    """`work` on a hashing thread, once one is free within WAIT_S; else `Busy`."""
    global _waiting
    with _waiting_lock:
        if _waiting >= MAX_WAITING:
            raise Busy()
        _waiting += 1
    try:
        job = _pool.submit(work)
        done = asyncio.wrap_future(job)
        try:
            return await asyncio.wait_for(asyncio.shield(done), WAIT_S)
        except TimeoutError:
            # Still queued: taken back, never run. Already running: it finishes, and this
            # request has its answer a moment later than WAIT_S.
            if job.cancel():
                raise Busy() from None
            return await done
    finally:
        with _waiting_lock:
            _waiting -= 1


async def hashed(password: str) -> str:
    """`hash_password`, within the bound."""
    return await _bounded(lambda: hash_password(password))


async def verified(password_hash: str, password: str) -> bool:
    """`verify_password`, within the bound."""
    return await _bounded(lambda: verify_password(password_hash, password))
