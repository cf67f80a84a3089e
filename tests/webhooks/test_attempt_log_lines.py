"""What the worker's log says of attempts (issue 40): a retry names its wait, not the
attempt's duration as if it were one ("retrying ... in 3 ms"); a delivery that failed for good
is a warning, as is a subscription disabled after five failures in a row, with its
organization and subscription."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import update

from hangar.webhooks.models import Delivery
from tests.fixtures.webhooks import Hooks


def said(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "hangar.webhooks"]


async def test_a_retry_names_its_wait_and_a_last_failure_and_the_disable_are_warnings(
    hooks: Hooks, caplog: pytest.LogCaptureFixture
) -> None:
    hooks.receiver.statuses = [500]
    retried = await hooks.subscribe("/first")
    await hooks.fire()
    with caplog.at_level(logging.INFO, logger="hangar.webhooks"):
        assert await hooks.dispatcher().run_once() == 1
    [(level, line)] = said(caplog)
    assert level == logging.INFO
    assert line.startswith("delivery ")
    assert " attempt 1 took " in line
    assert line.endswith(" ms: HTTP 500; retrying in 2 s")

    caplog.clear()
    doomed = await hooks.subscribe("/last", consecutive_failures=4)
    await hooks.fire()
    async with hooks.services.engine.begin() as conn:
        await conn.execute(
            update(Delivery).where(Delivery.subscription_id == doomed).values(attempts_made=2)
        )
    hooks.clock.advance(seconds=2)  # the first subscription's retry is due too
    with caplog.at_level(logging.INFO, logger="hangar.webhooks"):
        assert await hooks.dispatcher().run_once() == 3
    lines = said(caplog)
    # The disable is told as its batch commits, before the attempt's own line.
    warnings = sorted(line for level, line in lines if level == logging.WARNING)
    assert len(warnings) == 2, lines
    assert warnings[0].endswith(" ms: HTTP 500; failed after 3 attempts")
    assert warnings[1] == (
        f"webhook subscription {doomed} of organization {hooks.org.id} disabled after 5 "
        "consecutive failed deliveries; its admins are told, and Enable then Recover sends "
        "what it missed"
    )
    infos = sorted(line.rsplit(": ", 1)[1] for level, line in lines if level == logging.INFO)
    assert infos == ["HTTP 500; retrying in 2 s", "HTTP 500; retrying in 8 s"]
    assert str(retried) not in " ".join(warnings)
