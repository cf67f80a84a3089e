"""When to retry, and how long to wait first: decisions only, no I/O, no sleeping.

Every call the client makes is a GET, so any of them may be sent again. What is retried:

- 429: hangar counts 60 requests per calendar minute and 1000 per calendar hour per key,
  and its 429 carries no Retry-After: the only way to know when the refusal ends is the
  bucket its detail names. So a 429 waits until that bucket opens, plus a little jitter so
  that many clients refused in one minute do not all return at its first instant. A 429
  from something in front of hangar (no bucket) waits its Retry-After, else backs off.
- 502, 503, 504 and connection failures (refused, reset, timed out, cut off): exponential
  backoff with jitter, at least the Retry-After the answer asks for, never more than the cap.
- Nothing else: another 4xx will be refused again, and a 500 is a bug, not a blip.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from email.utils import mktime_tz, parsedate_tz

import httpx

from hangar_client.errors import (
    APIConnectionError,
    HangarClientError,
    HangarError,
    RateLimited,
    bucket_opens,
)

RETRIED_STATUSES = frozenset({502, 503, 504})
# Failures of the exchange itself that another attempt may not meet. Not retried: an
# unsupported scheme or a malformed request (ours to fix), an answer that cannot be decoded.
RETRIED_TRANSPORT = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
    httpx.ProxyError,
)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds of the waiting.

    A 429 whose bucket opens later than `max_rate_limit_wait` seconds from now is raised at
    once (`RateLimited`), never slept through: by default a minute bucket is waited for and
    an hour bucket is not. 502, 503, 504 and connection failures are tried `max_retries`
    more times, waiting `backoff_base` seconds at most at first, doubling, never more than
    `backoff_cap` (also when a Retry-After asks for longer).
    """

    max_rate_limit_wait: float = 90.0
    max_rate_limit_retries: int = 3
    rate_limit_jitter: float = 1.0  # up to this many seconds after the bucket opens
    # 1.2's name for max_retries, when only 503 was retried; when set, it wins.
    max_unavailable_retries: int | None = None
    backoff_base: float = 0.5  # the first retry waits up to this, then doubling
    backoff_cap: float = 8.0
    max_retries: int = 2  # as Stripe's and OpenAI's clients: three attempts in all

    @property
    def transient_retries(self) -> int:
        if self.max_unavailable_retries is not None:
            return self.max_unavailable_retries
        return self.max_retries


def rate_limit_wait(error: RateLimited, now: datetime, jitter: float) -> float | None:
    """Seconds from `now` until the refusing bucket opens, plus `jitter`; None when the 429
    names no bucket."""
    if error.bucket is None:
        return None
    return (bucket_opens(error.bucket, now) - now).total_seconds() + jitter


def backoff(attempt: int, policy: RetryPolicy, random: Callable[[], float]) -> float:
    """Exponential, capped, with "equal jitter": between half and all of the step, so it
    never collapses to zero and retries spread out."""
    # The exponent stops growing long after the cap binds: 2.0**1024 overflows a float.
    step = min(policy.backoff_cap, policy.backoff_base * 2.0 ** min(attempt, 64))
    return step / 2 + step / 2 * random()


def retry_after(error: HangarError, now: datetime) -> float | None:
    """The answer's Retry-After in seconds (RFC 9110 §10.2.3: seconds or an HTTP date), or
    None when it has none that can be read."""
    value = error.response.headers.get("Retry-After") if error.response is not None else None
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    moment = parsedate_tz(value)
    if moment is None:
        return None
    return max(0.0, mktime_tz(moment) - now.timestamp())


def is_retried(error: HangarClientError) -> bool:
    """Whether a failure may be met again by trying again (the policy's bounds aside)."""
    if isinstance(error, HangarError):
        return error.status == 429 or error.status in RETRIED_STATUSES
    if isinstance(error, APIConnectionError):
        return isinstance(error.__cause__, RETRIED_TRANSPORT)
    return False


@dataclass
class RetryState:
    """One request's retries so far."""

    rate_limited: int = 0
    transient: int = 0

    def wait_before_retry(
        self,
        error: HangarClientError,
        policy: RetryPolicy,
        now: datetime,
        random: Callable[[], float],
    ) -> float | None:
        """Seconds to wait before trying again, or None to give up (and raise `error`)."""
        if not is_retried(error):
            return None
        if isinstance(error, RateLimited):
            return self._rate_limited(error, policy, now, random)
        if self.transient >= policy.transient_retries:
            return None
        self.transient += 1
        wait = backoff(self.transient - 1, policy, random)
        asked = retry_after(error, now) if isinstance(error, HangarError) else None
        return min(max(wait, asked or 0.0), policy.backoff_cap)

    def _rate_limited(
        self,
        error: RateLimited,
        policy: RetryPolicy,
        now: datetime,
        random: Callable[[], float],
    ) -> float | None:
        if self.rate_limited >= policy.max_rate_limit_retries:
            return None
        wait = rate_limit_wait(error, now, policy.rate_limit_jitter * random())
        if wait is None:
            wait = retry_after(error, now)
        if wait is None:
            wait = backoff(self.rate_limited, policy, random)
        if wait > policy.max_rate_limit_wait:
            return None
        self.rate_limited += 1
        return wait
