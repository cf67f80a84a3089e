"""When to retry, and how long to wait first: decisions only, no I/O, no sleeping.

hangar counts 60 requests per calendar minute and 1000 per calendar hour per key, and its
429 carries no Retry-After: the only way to know when the refusal ends is the bucket. So a
429 waits until the next bucket opens (the hour's when the detail names the hourly limit)
plus a little jitter, so that many clients refused in one minute do not all return at its
first instant. A 503 is a datastore or capacity blip: exponential backoff with jitter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

HOURLY_MARK = "/hour"  # the detail names the limit that refused: "... 1000/hour per API key"


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds of the waiting. A 429 whose bucket opens later than `max_rate_limit_wait`
    seconds from now is raised at once (`RateLimited`), never slept through: by default a
    minute bucket is waited for and an hour bucket is not."""

    max_rate_limit_wait: float = 90.0
    max_rate_limit_retries: int = 3
    rate_limit_jitter: float = 1.0  # up to this many seconds after the bucket opens
    max_unavailable_retries: int = 4
    backoff_base: float = 0.5  # the first 503 waits up to this, then doubling
    backoff_cap: float = 8.0


def rate_limit_wait(detail: str, now: datetime, jitter: float) -> float:
    """Seconds from `now` until the refusing bucket opens, plus `jitter`."""
    period = 3600.0 if HOURLY_MARK in detail else 60.0
    into_bucket: float = now.timestamp() % period
    return period - into_bucket + jitter


def backoff(attempt: int, policy: RetryPolicy, random: Callable[[], float]) -> float:
    """Exponential, capped, with "equal jitter": between half and all of the step, so it
    never collapses to zero and retries spread out."""
    step = min(policy.backoff_cap, policy.backoff_base * 2.0**attempt)
    return step / 2 + step / 2 * random()


@dataclass
class RetryState:
    """One request's retries so far."""

    rate_limited: int = 0
    unavailable: int = 0

    def wait_before_retry(
        self,
        status: int,
        detail: str,
        policy: RetryPolicy,
        now: datetime,
        random: Callable[[], float],
    ) -> float | None:
        """Seconds to wait before trying again, or None to give up (and raise)."""
        if status == 429:
            wait = rate_limit_wait(detail, now, policy.rate_limit_jitter * random())
            if self.rate_limited >= policy.max_rate_limit_retries:
                return None
            if wait > policy.max_rate_limit_wait:
                return None
            self.rate_limited += 1
            return wait
        if status == 503:
            if self.unavailable >= policy.max_unavailable_retries:
                return None
            self.unavailable += 1
            return backoff(self.unavailable - 1, policy, random)
        return None
