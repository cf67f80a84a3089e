"""The sans-I/O core both clients drive: a request's plan is a generator that yields what to
do next (send this, or sleep this long), is sent the outcome of each send (the response, or
the httpx error that stood in its way), and returns the decoded result or raises one of the
client's errors. The sync and async clients only carry out the steps, so the retry, error
and decoding logic exists once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Generic, TypeVar

import httpx

from hangar_client._version import VERSION
from hangar_client.errors import (
    APIConnectionError,
    APITimeoutError,
    HangarClientError,
    InvalidPayload,
    error_for,
)
from hangar_client.policy import RetryPolicy, RetryState

T = TypeVar("T")
# A repeatable parameter (the events API's `event`) is a sequence: httpx repeats the name.
Params = Mapping[str, str | Sequence[str]]
USER_AGENT = f"hangar-client-python/{VERSION}"
log = logging.getLogger("hangar_client")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One operation as sent: its path and query, and how its 200 is read."""

    path: str
    decode: Callable[[httpx.Response], T]
    params: Params = field(default_factory=lambda: dict[str, str]())
    key_in_query: bool = False  # the calendar feed: calendar clients cannot send headers


@dataclass(frozen=True)
class Send:
    path: str
    params: Params
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Retrying:
    """What `on_retry` is told before each wait: the failure that is being retried (a
    `RateLimited`, a `ServerError`, an `APIConnectionError`), how long the client waits
    now, and which retry of the request follows (1 for the first)."""

    error: HangarClientError
    wait: float
    attempt: int


Step = Send | Sleep
Outcome = httpx.Response | httpx.RequestError
Plan = Generator[Step, Outcome | None, T]


@dataclass(frozen=True)
class Core:
    key: str
    policy: RetryPolicy
    now: Callable[[], datetime]
    random: Callable[[], float]
    on_retry: Callable[[Retrying], None] | None = None

    def configured(
        self,
        *,
        policy: RetryPolicy | None,
        max_retries: int | None,
        now: Callable[[], datetime] | None = None,
        random: Callable[[], float] | None = None,
        on_retry: Callable[[Retrying], None] | None = None,
    ) -> Core:
        """This core with what a client's constructor or `with_options` was given."""
        policy = policy or self.policy
        if max_retries is not None:
            policy = replace(policy, max_retries=max_retries, max_unavailable_retries=None)
        return replace(
            self,
            policy=policy,
            now=now or self.now,
            random=random or self.random,
            on_retry=on_retry or self.on_retry,
        )

    def plan(self, call: Call[T]) -> Plan[T]:
        if call.key_in_query:
            send = Send(call.path, {**call.params, "token": self.key}, {})
        else:
            send = Send(call.path, call.params, {"Authorization": f"Bearer {self.key}"})
        retries = RetryState()
        while True:
            outcome = yield send
            assert outcome is not None  # the drivers send an outcome after each Send
            if isinstance(outcome, httpx.Response) and outcome.is_success:
                return _decoded(call, outcome)
            error = self._error(call, outcome)
            wait = retries.wait_before_retry(error, self.policy, self.now(), self.random)
            if wait is None:
                if isinstance(outcome, httpx.RequestError):
                    raise error from outcome
                raise error
            notice = Retrying(error, wait, retries.rate_limited + retries.transient)
            log.info("retrying GET %s in %.2f s: %s", call.path, wait, error)
            if self.on_retry is not None:
                self.on_retry(notice)
            yield Sleep(wait)

    def _error(self, call: Call[T], outcome: Outcome) -> HangarClientError:
        if isinstance(outcome, httpx.Response):
            return error_for(outcome, self.now())
        # The path, never the URL: the calendar feed's query carries the key.
        what = f"{type(outcome).__name__}: {outcome}" if str(outcome) else type(outcome).__name__
        try:
            request: httpx.Request | None = outcome.request
        except RuntimeError:  # raised by a transport that did not attach it
            request = None
        error: APIConnectionError
        if isinstance(outcome, httpx.TimeoutException):
            error = APITimeoutError(f"no answer in time to GET {call.path} ({what})", request)
        else:
            error = APIConnectionError(f"could not GET {call.path} from hangar ({what})", request)
        error.__cause__ = outcome  # already for the retry's decision and on_retry
        return error


def _decoded(call: Call[T], response: httpx.Response) -> T:
    try:
        return call.decode(response)
    except InvalidPayload:
        raise
    except ValueError as exc:  # not JSON at all, or not UTF-8 (a captive portal's page, say)
        kind = response.headers.get("Content-Type", "no Content-Type")
        raise InvalidPayload(
            f"the answer to GET {call.path} is not the API's JSON ({kind}): {exc}"
        ) from exc


def utc_now() -> datetime:
    """Both clients' default clock."""
    return datetime.now(UTC)
