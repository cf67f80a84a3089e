"""Sign-in costs an attacker more than it costs hangar (issue 24, point 1): failures are
budgeted per client address and per email from that address, refused before any hash; at
most `passwords.SLOTS` hashes run at once; an unknown email costs the same hash as a known one.

The test client's connection comes from 127.0.0.1, a trusted proxy by default, so
`X-Forwarded-For` names the client address each request stands for.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import argon2
import httpx
import pytest
from argon2 import PasswordHasher

from hangar.accounts.service.sign_in import ACCOUNT_LIMITS, ADDRESS_LIMITS
from hangar.auth import passwords, sessions
from tests.fixtures.fakes import FakeClock
from tests.fixtures.pages import login_form
from tests.fixtures.sign_ins import ATTACKER, OWNER, PASSWORD, random_email, sign_in


async def test_a_flood_of_random_emails_from_one_address_is_refused_before_hashing(
    client: httpx.AsyncClient, owner_email: str, hashes: list[str], clock: FakeClock
) -> None:
    allowed = ADDRESS_LIMITS[0].count
    for _ in range(allowed):
        assert (await sign_in(client, random_email(), "guess", ATTACKER)).status_code == 401
    assert len(hashes) == allowed

    refused = await sign_in(client, random_email(), "guess", ATTACKER)
    assert refused.status_code == 429
    assert refused.json()["code"] == "RATE_LIMITED"
    assert "from one address" in refused.json()["detail"]
    # Until the minute's window ends, counted from the clock's own second.
    wait = int(refused.headers["Retry-After"])
    assert wait == 60 - int(clock.now().timestamp()) % 60
    # The refusal cost no hash, and neither does a right password from that address.
    assert (await sign_in(client, owner_email, PASSWORD, ATTACKER)).status_code == 429
    assert len(hashes) == allowed

    # Another address is not held back by it.
    assert (await sign_in(client, owner_email, PASSWORD, OWNER)).status_code == 200
    clock.advance(seconds=wait)
    assert (await sign_in(client, owner_email, PASSWORD, ATTACKER)).status_code == 200


async def test_guessing_someone_s_password_does_not_lock_them_out(
    client: httpx.AsyncClient, owner_email: str, hashes: list[str]
) -> None:
    allowed = ACCOUNT_LIMITS[0].count
    for _ in range(allowed):
        assert (await sign_in(client, owner_email, "guess", ATTACKER)).status_code == 401
    refused = await sign_in(client, owner_email, PASSWORD, ATTACKER)
    assert refused.status_code == 429
    assert "for this email" in refused.json()["detail"]
    assert int(refused.headers["Retry-After"]) > 0
    assert len(hashes) == allowed

    # The owner, from their own address, signs in as ever.
    assert (await sign_in(client, owner_email, PASSWORD, OWNER)).status_code == 200
    # And the attacker's address still has budget for other emails (only this one is spent).
    assert (await sign_in(client, random_email(), "guess", ATTACKER)).status_code == 401


async def test_an_address_the_client_names_itself_is_not_believed(
    client: httpx.AsyncClient, owner_email: str
) -> None:
    # The attacker puts a fresh address of its own at the start of X-Forwarded-For on each
    # try; the proxy in front (here the test's trusted 127.0.0.1) appended the real one.
    for i in range(ADDRESS_LIMITS[0].count):
        forged = f"10.9.{i}.1, {ATTACKER}"
        assert (await sign_in(client, random_email(), "guess", forged)).status_code == 401
    assert (
        await sign_in(client, random_email(), "guess", f"10.9.99.1, {ATTACKER}")
    ).status_code == 429


def test_passwords_are_hashed_at_argon2s_recommended_cost(
    production_hasher: PasswordHasher,
) -> None:
    # argon2id, 64 MiB, 3 passes, 4 lanes (RFC 9106's second choice, the library's default).
    # The suite's own process hashes cheaper (tests/conftest.py): this is what production runs.
    made = production_hasher.hash(PASSWORD)
    assert argon2.extract_parameters(made) == argon2.profiles.RFC_9106_LOW_MEMORY
    assert production_hasher.verify(made, PASSWORD)


async def test_an_unknown_email_costs_the_same_hash_as_a_known_one(
    client: httpx.AsyncClient, owner_email: str, hashes: list[str]
) -> None:
    assert (await sign_in(client, owner_email, "guess", OWNER)).status_code == 401
    assert (await sign_in(client, random_email(), "guess", OWNER)).status_code == 401
    assert hashes == ["guess", "guess"]
    # Against a hash of the same cost as a real one: the same time either way.
    real = argon2.extract_parameters(passwords.hash_password(PASSWORD))
    assert argon2.extract_parameters(await sessions._dummy_hash()) == real


async def test_at_most_a_few_hashes_run_at_once_and_the_rest_are_refused_in_time(
    client: httpx.AsyncClient, owner_email: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    running = 0
    most = 0
    lock = threading.Lock()

    def held(password_hash: str, password: str) -> bool:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        release.wait(10)
        with lock:
            running -= 1
        return False

    monkeypatch.setattr(passwords, "verify_password", held)
    monkeypatch.setattr(passwords, "WAIT_S", 0.2)
    # Twelve people at once, each from an address of their own: no budget is in the way.
    tries = [
        asyncio.create_task(sign_in(client, random_email(), "guess", f"192.0.2.{i}"))
        for i in range(12)
    ]
    # All but the ones holding a slot are refused within the wait (0.2 s; 5 s is the bound
    # on a busy machine), and told when to retry.
    done: set[asyncio.Task[httpx.Response]] = set()
    pending = set(tries)
    deadline = time.monotonic() + 5
    while len(pending) > passwords.SLOTS and time.monotonic() < deadline:
        ended, pending = await asyncio.wait(
            pending, timeout=deadline - time.monotonic(), return_when=asyncio.FIRST_COMPLETED
        )
        done |= ended
    assert len(pending) == passwords.SLOTS
    busy = [t.result() for t in done]
    assert {r.status_code for r in busy} == {429}
    assert all(r.headers["Retry-After"] == "1" for r in busy)
    assert most == passwords.SLOTS
    release.set()
    finished = await asyncio.gather(*pending)
    assert {r.status_code for r in finished} == {401}


async def test_the_login_form_counts_the_same_budgets_and_says_when_to_come_back(
    client: httpx.AsyncClient, owner_email: str
) -> None:
    for _ in range(ADDRESS_LIMITS[0].count):
        assert (await sign_in(client, random_email(), "guess", ATTACKER)).status_code == 401
    page = await client.get("/login", headers={"X-Forwarded-For": ATTACKER})
    form = await client.post(
        "/login",
        data=login_form(page.text, owner_email, PASSWORD),
        headers={"X-Forwarded-For": ATTACKER},
    )
    assert form.status_code == 429
    assert "from one address" in form.text
    assert int(form.headers["Retry-After"]) > 0
    assert sessions.COOKIE not in form.cookies


async def test_hashes_run_at_a_lower_priority_than_serving() -> None:
    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    # 19 is the lowest priority there is, whatever the process started at: run under
    # `nice -n 10`, the serving threads start at 10 and a hash still goes below them.
    serving = niceness()
    assert await passwords._bounded(niceness) == passwords.NICENESS == 19
    assert niceness() == serving  # only the hashing thread was lowered
