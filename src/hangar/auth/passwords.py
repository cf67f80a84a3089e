"""Password hashing with argon2id (the library's current recommended parameters), and the
bound on what hashing may take from everything else a process serves.

Each hash takes 64 MiB and, for some 50 ms, as many cores as it has lanes (4), on purpose:
that is what makes a stolen hash slow to guess. It also makes the sign-in form the cheapest
way to load the server, since anyone may post to it. So:

- hashes run one at a time per process (`SLOTS`), on a thread of their own: however many
  sign-ins arrive at once, hashing holds at most 64 MiB more memory;
- that thread, and the lanes argon2 starts from it, run at a lower scheduling priority
  (`NICENESS`): when a hash and the event loop both want a core, the loop gets it, so the
  requests of everyone else keep their latency (bench G12c);
- a request waits for the slot at most `WAIT_S`, and is then refused (`Busy`, a 429 with
  `Retry-After`) rather than queued without end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from hangar.kit.errors import RateLimited

_hasher = PasswordHasher()

# The one password rule, wherever a password is chosen (an invitation's link, a reset link,
# `hangar user create --password`): long enough to resist guessing at the hash's cost, short
# enough that hashing it costs what any other does. Signing in accepts any length up to the
# maximum, so an older, shorter password still works.
MIN_LENGTH = 8
MAX_LENGTH = 1024
_T = TypeVar("_T")

# One at a time: each hash already spreads over 4 lanes, and a flying club's sign-ins come
# seconds apart. `hangar serve --workers auto` gives each process its own.
SLOTS = 1
# Linux's nice value for the hashing thread (per thread on Linux; argon2's lanes inherit it):
# 19, the lowest, weighs 15 against the event loop's 1024, so a core the loop wants is the
# loop's within a tick, while an idle core still hashes at full speed. (10 left a sign-in
# flood at 12 a second doubling others' p99; 19 adds half: bench G12c.)
NICENESS = 19
# A person signing in while others do waits a moment, not the length of a flood.
WAIT_S = 2.0
# Past this many waiting, a request is refused at once: it could not get the slot within
# WAIT_S anyway (each hash takes some 50 ms; 32 waiting are a second and a half of work).
MAX_WAITING = 32


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


def _lower_priority() -> None:
    # Best effort: a platform without per-thread priorities hashes at the loop's.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)


_pool = ThreadPoolExecutor(
    max_workers=SLOTS, thread_name_prefix="argon2", initializer=_lower_priority
)
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
