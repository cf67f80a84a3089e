"""Sign-in budgets cannot be raced (issue 41, point 1). A try is counted in its budgets
before its password is hashed, atomically (Redis's script when there is one, else the
process's counters), and given back when it succeeds: so a burst of concurrent wrong
passwords verifies no more than the budget allows. Before, the budget was read before the
hash and counted after it, and 16 concurrent tries against a limit of 10 verified 16."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
import trustme

from hangar.accounts.service.sign_in import ACCOUNT_LIMITS, ADDRESS_LIMITS
from hangar.kit.container import Services
from tests.fixtures.environment import PG_URL, REDIS_URL
from tests.fixtures.serve_process import serve_process
from tests.fixtures.sign_ins import ATTACKER, PASSWORD, random_email, sign_in

BURST = 30


async def burst(client: httpx.AsyncClient, emails: list[str]) -> list[int]:
    tries = [sign_in(client, email, "guess", ATTACKER) for email in emails]
    return [r.status_code for r in await asyncio.gather(*tries)]


async def test_a_burst_for_one_email_verifies_at_most_its_budget(
    client: httpx.AsyncClient, owner_email: str, hashes: list[str]
) -> None:
    statuses = await burst(client, [owner_email] * BURST)
    allowed = ACCOUNT_LIMITS[0].count
    assert len(hashes) <= allowed
    assert statuses.count(401) == len(hashes)
    assert set(statuses) <= {401, 429}
    # The budget is spent: even the right password is refused, and costs no hash.
    assert (await sign_in(client, owner_email, PASSWORD, ATTACKER)).status_code == 429
    assert len(hashes) <= allowed


async def test_a_burst_of_random_emails_verifies_at_most_the_addresss_budget(
    client: httpx.AsyncClient, owner_email: str, hashes: list[str]
) -> None:
    statuses = await burst(client, [random_email() for _ in range(BURST)])
    assert len(hashes) <= ADDRESS_LIMITS[0].count
    assert statuses.count(401) == len(hashes)
    assert 429 in statuses


async def test_a_success_gives_its_count_back(
    client: httpx.AsyncClient, owner_email: str, hashes: list[str]
) -> None:
    allowed = ACCOUNT_LIMITS[0].count
    for _ in range(allowed - 1):
        assert (await sign_in(client, owner_email, "guess", ATTACKER)).status_code == 401
    assert (await sign_in(client, owner_email, PASSWORD, ATTACKER)).status_code == 200
    # The success was counted while its hash ran, then given back: one failure is left.
    assert (await sign_in(client, owner_email, "guess", ATTACKER)).status_code == 401
    assert (await sign_in(client, owner_email, PASSWORD, ATTACKER)).status_code == 429


@pytest.mark.skipif(not (PG_URL and REDIS_URL), reason="--workers 2 needs PostgreSQL and Redis")
async def test_two_processes_sharing_redis_verify_at_most_the_budget(
    services: Services,
    owner_email: str,
    database_url: str,
    ca: trustme.CA,
    tmp_path: Path,
    repo_root: Path,
) -> None:
    # Real processes at the production hashing cost: each 401 is a verified password.
    async with (
        serve_process(database_url, 2, ca, tmp_path, repo_root) as served,
        httpx.AsyncClient(base_url=served.base, timeout=60) as client,
    ):
        statuses = await burst(client, [owner_email] * BURST)
    assert statuses.count(401) <= ACCOUNT_LIMITS[0].count
    assert set(statuses) <= {401, 429}


async def test_an_ipv6_client_is_budgeted_by_its_slash_64(
    client: httpx.AsyncClient, owner_email: str, hashes: list[str]
) -> None:
    # Each try from another address of the same /64: one subscriber, one budget.
    for i in range(ADDRESS_LIMITS[0].count):
        answer = await sign_in(client, random_email(), "guess", f"2001:db8:7:9::{i + 1:x}")
        assert answer.status_code == 401
    refused = await sign_in(client, random_email(), "guess", "2001:db8:7:9:ffff::1")
    assert refused.status_code == 429
    # The next /64 is someone else.
    assert (await sign_in(client, random_email(), "guess", "2001:db8:7:a::1")).status_code == 401
