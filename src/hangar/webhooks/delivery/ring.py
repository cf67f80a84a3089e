"""Where a dispatcher's claims look for work: round a ring of the subscriptions with pending
deliveries, in id order, a window at a time (hangar.webhooks.delivery.claims runs the statements).

A claim's statements cost what its window holds, not what the queue does: with 10,000
subscriptions holding work, one statement over all of them took 300 ms (bench G16), a window
of 128 about 10 ms. Each claim goes on from where the last one stopped and back to the start
after the last, so every subscription with work is looked at once per turn of the ring,
whatever its neighbours' backlogs; within a window, the claim takes by turn across
organizations as ever (hangar.webhooks.delivery.claims).
"""

from __future__ import annotations

import uuid

# Subscriptions per window. Ten deliveries each at most (their cap) is 1,280 for a worker's
# 400 slots; and every group the isolation scenarios name (an organization's 20 subscriptions
# timing out, 200 organizations sharing one destination) fits in a window beside a healthy
# organization, so one claim still sees them all at once.
WINDOW = 128
# Windows an idle dispatcher's claim walks at most: a claim finding nothing in the first
# (every subscription there at its cap, or waiting for a retry) goes on to the next. A turn
# longer than this is finished by the claims that follow at once (`Ring.unfinished`). A busy
# dispatcher's claims walk one window each, and its outcomes' refills finish the turn
# (hangar.webhooks.delivery.dispatcher).
WINDOWS_PER_CLAIM = 4


class Ring:
    """One dispatcher's place in the ring, and the turn its claims are on. The loop's claim
    and a batch of outcomes' refill may walk at once: at worst both look at one window, and
    the leases (SKIP LOCKED on PostgreSQL, one writer on SQLite) keep them from taking the
    same delivery; a refill that fills its slots kicks the loop, which claims again."""

    def __init__(self, window: int = WINDOW, windows_per_claim: int = WINDOWS_PER_CLAIM) -> None:
        self.window = window
        self.windows_per_claim = windows_per_claim
        self.after: uuid.UUID | None = None  # the last subscription walked (None: the start)
        # A turn a claim left unfinished, at its last window, with slots still free: the
        # next claim goes on with it. Only once a turn has looked at every subscription with
        # work may an idle dispatcher with free slots sleep (a busy one, for a short step).
        self.turn: Turn | None = None

    @property
    def unfinished(self) -> bool:
        """Claim again (an idle dispatcher at once, a busy one within a step): part of the
        ring has not been looked at this turn."""
        return self.turn is not None

    def walked(self, found: list[uuid.UUID]) -> None:
        """`found`, a window walked from `after`: the next window begins after it, or at the
        start once the walk reached the end (a window not filled)."""
        self.after = found[-1] if len(found) == self.window else None


class Turn:
    """A way round the ring, from where a claim began, until every subscription with work
    has been looked at once."""

    def __init__(self, ring: Ring) -> None:
        self.window = ring.window
        self.began = ring.after
        self.reached_end = False
        self.done = False

    def clip(self, found: list[uuid.UUID]) -> list[uuid.UUID]:
        """What of a window walked this turn has not looked at yet; `done` once it has gone
        round (the window reached the end, or came back to where the turn began)."""
        began = self.began
        if not self.reached_end or began is None:
            # On the way from where the turn began to the end of the ring.
            if len(found) < self.window:
                self.reached_end = True
                self.done = began is None
            return found
        # Round again from the start, up to where the turn began (not yet looked at).
        self.done = len(found) < self.window or found[-1] >= began
        return [i for i in found if i <= began]
