"""The sans-I/O core both clients drive: a request's plan is a generator that yields what to
do next (send this, or sleep this long), is sent each response, and returns the decoded
result or raises the API's error. The sync and async clients only carry out the steps, so
the retry and decoding logic exists once.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Generic, TypeVar

import httpx

from hangar_client._version import VERSION
from hangar_client.errors import error_for
from hangar_client.policy import RetryPolicy, RetryState

T = TypeVar("T")
# A repeatable parameter (the events API's `event`) is a sequence: httpx repeats the name.
Params = Mapping[str, str | Sequence[str]]
USER_AGENT = f"hangar-client-python/{VERSION}"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One operation as sent: its path and query, and how its 200 is read."""

    path: str
    decode: Callable[[httpx.Response], T]
    params: Params = field(default_factory=dict)
    key_in_query: bool = False  # the calendar feed: calendar clients cannot send headers


@dataclass(frozen=True)
class Send:
    path: str
    params: Params
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Send | Sleep
Plan = Generator[Step, httpx.Response | None, T]


@dataclass(frozen=True)
class Core:
    key: str
    policy: RetryPolicy
    now: Callable[[], datetime]
    random: Callable[[], float]

    def plan(self, call: Call[T]) -> Plan[T]:
        if call.key_in_query:
            send = Send(call.path, {**call.params, "token": self.key}, {})
        else:
            send = Send(call.path, call.params, {"Authorization": f"Bearer {self.key}"})
        retries = RetryState()
        while True:
            response = yield send
            assert response is not None  # the drivers send a response after each Send
            if response.is_success:
                return call.decode(response)
            error = error_for(response.status_code, _json_or_none(response), response.text)
            wait = retries.wait_before_retry(
                response.status_code, error.detail, self.policy, self.now(), self.random
            )
            if wait is None:
                raise error
            yield Sleep(wait)


def utc_now() -> datetime:
    """Both clients' default clock."""
    return datetime.now(UTC)


def _json_or_none(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None
