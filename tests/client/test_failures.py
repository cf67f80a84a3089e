"""The client fails well, sync and async alike: every failure is one of its own errors (a bad
key before anything is sent, no answer as APIConnectionError with httpx's error as its
cause, a proxy's page as the status's error), 502, 503, 504 and connection failures are
retried with capped exponential backoff and jitter, a 429 waits for the bucket it names and
says which, and nothing else is retried. Peers that hangar never is (a proxy, a dead port)
are scripted with httpx.MockTransport or served on loopback; waits are recorded, never
slept."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import pytest
from scripts.scratch import free_port

from hangar_client import (
    APIConnectionError,
    APITimeoutError,
    AsyncClient,
    BadGateway,
    Client,
    ConfigurationError,
    GatewayTimeout,
    HangarClientError,
    HangarError,
    InsufficientScope,
    InvalidAPIKey,
    InvalidCursor,
    InvalidPayload,
    RateLimited,
    Retrying,
    RetryPolicy,
    ServerError,
    ServiceUnavailable,
    Unauthorized,
    ValidationFailed,
)
from hangar_client.models import Aircraft
from tests.fixtures.client_transports import (
    HOUR_429,
    MINUTE_429,
    NGINX_502,
    Answer,
    Script,
    html_502,
    json_answer,
)
from tests.fixtures.fakes import START
from tests.fixtures.receivers import Receiver

KEY = "svc_pk_" + "k" * 43
BASE = "https://hangar.example"
BACKOFF = [0.375, 0.75]  # equal jitter at random 0.5: three quarters of 0.5 s, then of 1 s


def ok() -> httpx.Response:
    return httpx.Response(200, json=[])


@dataclass
class Calls:
    """`aircraft()` through a client of one kind (`sync` or `async`) over a script, with
    the test's clock (START, 10:00:30), random 0.5, and its waits and retries recorded."""

    kind: str
    answers: list[Answer]
    slept: list[float] = field(default_factory=list)
    heard: list[Retrying] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.script = Script(self.answers)

    @property
    def sent(self) -> int:
        return len(self.script.requests)

    async def aircraft(
        self, *, policy: RetryPolicy | None = None, max_retries: int | None = None
    ) -> list[Aircraft]:
        if self.kind == "sync":
            with Client(
                BASE,
                KEY,
                policy=policy,
                max_retries=max_retries,
                transport=self.script.transport(),
                now=lambda: START,
                sleep=self.slept.append,
                random=lambda: 0.5,
                on_retry=self.heard.append,
            ) as client:
                return client.aircraft()

        async def sleep(seconds: float) -> None:
            self.slept.append(seconds)

        async with AsyncClient(
            BASE,
            KEY,
            policy=policy,
            max_retries=max_retries,
            transport=self.script.transport(),
            now=lambda: START,
            sleep=sleep,
            random=lambda: 0.5,
            on_retry=self.heard.append,
        ) as async_client:
            return await async_client.aircraft()


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


TRANSIENT: dict[str, tuple[Answer, type[HangarClientError]]] = {
    "502 from nginx": (html_502(), BadGateway),
    "503": (
        json_answer(503, {"detail": "down", "code": "SERVICE_UNAVAILABLE"}),
        ServiceUnavailable,
    ),
    "504, empty": (httpx.Response(504), GatewayTimeout),
    "connect refused": (httpx.ConnectError("[Errno 111] Connection refused"), APIConnectionError),
    "connect timeout": (httpx.ConnectTimeout("timed out"), APITimeoutError),
    "read timeout": (httpx.ReadTimeout("timed out"), APITimeoutError),
    "pool timeout": (httpx.PoolTimeout("no connection free"), APITimeoutError),
    "read error": (httpx.ReadError("[Errno 104] Connection reset by peer"), APIConnectionError),
    "cut off": (
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        APIConnectionError,
    ),
}


@pytest.mark.parametrize("name", TRANSIENT)
async def test_a_transient_failure_is_retried_with_backoff_then_succeeds(
    kind: str, name: str
) -> None:
    failure, raised = TRANSIENT[name]
    calls = Calls(kind, [failure, failure, ok()])
    assert await calls.aircraft() == []
    assert calls.sent == 3
    assert calls.slept == BACKOFF
    assert [(type(r.error), r.wait, r.attempt) for r in calls.heard] == [
        (raised, 0.375, 1),
        (raised, 0.75, 2),
    ]


@pytest.mark.parametrize("name", TRANSIENT)
async def test_a_lasting_failure_raises_the_clients_own_error_after_two_retries(
    kind: str, name: str
) -> None:
    failure, raised = TRANSIENT[name]
    calls = Calls(kind, [failure])
    with pytest.raises(HangarClientError) as caught:
        await calls.aircraft()
    error = caught.value
    assert type(error) is raised
    assert calls.sent == 3  # max_retries=2 by default, as Stripe's and OpenAI's clients
    assert calls.slept == BACKOFF
    if isinstance(failure, Exception):
        assert error.__cause__ is failure
        assert "/api/v1/external/aircraft" in str(error)
        assert type(failure).__name__ in str(error)
    else:
        assert isinstance(error, ServerError)
        assert isinstance(failure, httpx.Response)
        assert error.status == failure.status_code


async def test_a_timeout_is_a_connection_error_too(kind: str) -> None:
    calls = Calls(kind, [httpx.ReadTimeout("timed out")])
    with pytest.raises(APIConnectionError):  # one except for "no answer", as in OpenAI's
        await calls.aircraft(max_retries=0)
    assert calls.sent == 1


async def test_max_retries_and_the_cap_bound_the_backoff(kind: str) -> None:
    calls = Calls(kind, [httpx.Response(503)])
    with pytest.raises(ServiceUnavailable):
        await calls.aircraft(max_retries=0)
    assert (calls.sent, calls.slept) == (1, [])

    calls = Calls(kind, [httpx.Response(502)])
    with pytest.raises(BadGateway):
        await calls.aircraft(max_retries=5)
    assert calls.sent == 6
    assert calls.slept == [0.375, 0.75, 1.5, 3.0, 6.0]  # doubling: up to 0.5, 1, 2, 4, 8 s

    calls = Calls(kind, [httpx.Response(504)])
    with pytest.raises(GatewayTimeout):
        await calls.aircraft(policy=RetryPolicy(max_retries=4, backoff_cap=1.0))
    assert calls.slept == [0.375, 0.75, 0.75, 0.75]  # never more than backoff_cap


@pytest.mark.parametrize(("random", "waits"), [(0.0, [0.25, 0.5, 1.0]), (1.0, [0.5, 1.0, 2.0])])
def test_the_jitter_spreads_each_wait_between_half_and_all_of_its_step(
    random: float, waits: list[float]
) -> None:
    slept: list[float] = []
    script = Script([httpx.Response(503)])
    with (
        Client(
            BASE,
            KEY,
            max_retries=3,
            transport=script.transport(),
            sleep=slept.append,
            random=lambda: random,
        ) as client,
        pytest.raises(ServiceUnavailable),
    ):
        client.aircraft()
    assert slept == waits


async def test_retry_after_is_waited_for_up_to_the_cap(kind: str) -> None:
    asked = json_answer(
        503, {"detail": "busy", "code": "SERVICE_UNAVAILABLE"}, **{"Retry-After": "3"}
    )
    calls = Calls(kind, [asked, ok()])
    assert await calls.aircraft() == []
    assert calls.slept == [3.0]

    date = "Mon, 04 May 2026 10:00:34 GMT"  # RFC 9110's other form: 4 s after START
    calls = Calls(kind, [httpx.Response(502, headers={"Retry-After": date}), ok()])
    assert await calls.aircraft() == []
    assert calls.slept == [4.0]

    calls = Calls(kind, [httpx.Response(503, headers={"Retry-After": "120"}), ok()])
    assert await calls.aircraft() == []
    assert calls.slept == [8.0]  # backoff_cap: a retry, not two minutes of nothing


NOT_RETRIED: list[tuple[int, dict[str, str], type[HangarError]]] = [
    (400, {"detail": "bad cursor", "code": "INVALID_CURSOR"}, InvalidCursor),
    (401, {"detail": "Invalid API key", "code": "UNAUTHORIZED"}, Unauthorized),
    (403, {"detail": "needs read:aircraft", "code": "INSUFFICIENT_SCOPE"}, InsufficientScope),
    (404, {"detail": "Not found", "code": "NOT_FOUND"}, HangarError),
    (422, {"detail": "limit: too small", "code": "VALIDATION_ERROR"}, ValidationFailed),
    (500, {"detail": "Internal error; it has been logged", "code": "INTERNAL_ERROR"}, ServerError),
]


@pytest.mark.parametrize(("status", "body", "raised"), NOT_RETRIED)
async def test_other_errors_are_raised_at_once(
    kind: str, status: int, body: dict[str, str], raised: type[HangarError]
) -> None:
    calls = Calls(kind, [json_answer(status, body), ok()])
    with pytest.raises(raised) as caught:
        await calls.aircraft()
    assert type(caught.value) is raised
    assert (caught.value.status, caught.value.code, caught.value.detail) == (
        status,
        body["code"],
        body["detail"],
    )
    assert (calls.sent, calls.slept, calls.heard) == (1, [], [])


async def test_a_429_waits_for_the_minute_it_names_and_says_which(kind: str) -> None:
    calls = Calls(kind, [json_answer(429, MINUTE_429), ok()])
    assert await calls.aircraft() == []
    assert calls.slept == [30.5]  # to 10:01:00, and half the 1 s jitter
    (retry,) = calls.heard
    assert isinstance(retry.error, RateLimited)
    assert retry.error.bucket == "minute"
    assert retry.error.resets_at == datetime(2026, 5, 4, 10, 1, tzinfo=UTC)

    calls = Calls(kind, [json_answer(429, MINUTE_429)])
    with pytest.raises(RateLimited) as caught:
        await calls.aircraft(policy=RetryPolicy(max_rate_limit_retries=0))
    assert caught.value.bucket == "minute"
    assert calls.sent == 1


async def test_a_429_for_the_hour_is_raised_at_once_saying_so(kind: str) -> None:
    calls = Calls(kind, [json_answer(429, HOUR_429), ok()])
    with pytest.raises(RateLimited) as caught:
        await calls.aircraft()  # 59.5 minutes away: over max_rate_limit_wait (90 s)
    assert caught.value.bucket == "hour"
    assert caught.value.resets_at == datetime(2026, 5, 4, 11, 0, tzinfo=UTC)
    assert (calls.sent, calls.slept) == (1, [])

    calls = Calls(kind, [json_answer(429, HOUR_429), ok()])
    assert await calls.aircraft(policy=RetryPolicy(max_rate_limit_wait=3600)) == []
    assert calls.slept == [59 * 60 + 30.5]


async def test_a_proxys_429_names_no_bucket_and_waits_its_retry_after(kind: str) -> None:
    calls = Calls(kind, [httpx.Response(429, headers={"Retry-After": "7"}), ok()])
    assert await calls.aircraft() == []
    assert calls.slept == [7.0]

    calls = Calls(kind, [httpx.Response(429, text="slow down")])
    with pytest.raises(RateLimited) as caught:
        await calls.aircraft()
    assert caught.value.bucket is None
    assert caught.value.resets_at is None
    assert caught.value.code == "HTTP_429"
    assert calls.slept == [0.375, 0.75, 1.5]  # backoff, max_rate_limit_retries=3


async def test_a_proxys_page_is_the_status_error_with_a_readable_detail(kind: str) -> None:
    calls = Calls(kind, [html_502()])
    with pytest.raises(BadGateway) as caught:
        await calls.aircraft(max_retries=0)
    error = caught.value
    assert (error.status, error.code, error.body) == (502, "HTTP_502", None)
    assert error.detail == (
        "Bad Gateway (text/html content, not hangar's JSON error: it likely came from a proxy "
        "or load balancer in front of hangar)"
    )
    assert "<" not in str(error)
    assert error.response is not None
    assert error.response.text == NGINX_502  # all of it, for whoever needs it

    calls = Calls(kind, [httpx.Response(503)])
    with pytest.raises(ServiceUnavailable) as unavailable:
        await calls.aircraft(max_retries=0)
    assert unavailable.value.detail.startswith("Service Unavailable (an empty body, ")

    calls = Calls(kind, [json_answer(418, {"message": "a teapot"})])
    with pytest.raises(HangarError) as other:
        await calls.aircraft()
    assert (other.value.code, other.value.body) == ("HTTP_418", {"message": "a teapot"})
    assert other.value.detail.startswith("I'm a teapot (application/json content, ")


async def test_an_answer_that_is_not_the_apis_json_is_invalid_payload(kind: str) -> None:
    portal = httpx.Response(200, text="<html>Sign in to the Wi-Fi</html>")
    calls = Calls(kind, [portal, ok()])
    with pytest.raises(InvalidPayload) as caught:
        await calls.aircraft()
    assert isinstance(caught.value, HangarClientError)
    assert isinstance(caught.value, ValueError)  # as in 1.2
    assert "/api/v1/external/aircraft" in str(caught.value)
    assert calls.sent == 1


BAD_KEYS = {
    "": "no API key: pass the organization's key",
    "   ": "no API key: pass the organization's key",
    f" {KEY}\n": "the API key has spaces or a line break around it",
    "whsec_c2VjcmV0": "the API key does not start with svc_pk_",
    KEY[:-1]: "the API key has 42 characters after svc_pk_, not 43",
    KEY[:-2] + "é!": "the API key has characters that are not URL-safe after svc_pk_",
    KEY[:20] + " " + KEY[21:]: "the API key has characters that are not URL-safe",
}


@pytest.mark.parametrize("key", BAD_KEYS)
async def test_a_key_that_cannot_be_one_is_refused_when_the_client_is_built(key: str) -> None:
    script = Script([ok()])
    with pytest.raises(InvalidAPIKey) as sync:
        Client(BASE, key, transport=script.transport())
    with pytest.raises(InvalidAPIKey) as unsync:
        AsyncClient(BASE, key, transport=script.transport())
    for caught in (sync, unsync):
        assert str(caught.value).startswith(BAD_KEYS[key])
        assert isinstance(caught.value, ConfigurationError)
        assert isinstance(caught.value, HangarClientError)
        if key.strip():
            assert key.strip() not in str(caught.value)  # never echoed: it is a secret
    assert script.requests == []


@pytest.mark.parametrize("base", ["hangar.example", "ftp://hangar.example", "https://", ""])
def test_a_base_url_that_is_not_http_is_refused_when_the_client_is_built(base: str) -> None:
    for make in (Client, AsyncClient):
        with pytest.raises(ConfigurationError) as caught:
            make(base, KEY)
        assert str(caught.value) == (
            f"the base URL must be an http:// or https:// address, not {base!r}"
        )


def test_a_closed_port_is_a_connection_error_after_the_retries() -> None:
    slept: list[float] = []
    with (
        Client(f"http://127.0.0.1:{free_port()}", KEY, sleep=slept.append) as client,
        pytest.raises(APIConnectionError) as caught,
    ):
        client.members()
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert not isinstance(caught.value, APITimeoutError)
    assert len(slept) == 2


async def test_a_peer_that_never_answers_is_a_timeout(loopback: Receiver) -> None:
    held = asyncio.Event()
    loopback.held_paths["/api/v1/external/aircraft"] = held
    try:
        base = f"http://127.0.0.1:{loopback.port}"
        async with AsyncClient(base, KEY, timeout=0.2, max_retries=0) as client:
            with pytest.raises(APITimeoutError) as caught:
                await client.aircraft()
        assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    finally:
        held.set()


async def test_a_real_proxys_502_page_over_a_socket(loopback: Receiver) -> None:
    loopback.statuses = [502, 502, 200]
    loopback.body = NGINX_502.encode()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    base = f"http://127.0.0.1:{loopback.port}"
    async with AsyncClient(base, KEY, sleep=sleep, random=lambda: 0.5) as client:
        with pytest.raises(InvalidPayload):  # the third answer: 200, but a page, not JSON
            await client.aircraft()
    assert slept == BACKOFF
    assert len(loopback.requests) == 3

    loopback.requests.clear()
    loopback.statuses = [502]
    async with AsyncClient(base, KEY, sleep=sleep, max_retries=0) as client:
        with pytest.raises(BadGateway) as caught:
            await client.aircraft()
    assert caught.value.detail.startswith("Bad Gateway (")


def test_with_options_changes_the_retries_of_a_copy_only() -> None:
    script = Script([httpx.Response(503)])
    slept: list[float] = []
    with Client(BASE, KEY, transport=script.transport(), sleep=slept.append) as client:
        impatient = client.with_options(max_retries=0)
        with pytest.raises(ServiceUnavailable):
            impatient.aircraft()
        assert (len(script.requests), slept) == (1, [])
        with pytest.raises(ServiceUnavailable):
            impatient.events.list()  # the copy's events API is the copy's too
        assert (len(script.requests), slept) == (2, [])
        with pytest.raises(ServiceUnavailable):
            client.aircraft()
        assert len(script.requests) == 5
        assert len(slept) == 2
