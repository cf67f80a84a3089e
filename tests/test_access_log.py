"""The serve log never holds an API key, though the calendar feed carries one in its URL."""

from __future__ import annotations

import logging
import logging.config

import pytest

from hangar.access_log import log_config

KEY = "svc_pk_" + "A" * 43


def test_the_access_log_redacts_the_feed_token(capsys: pytest.CaptureFixture[str]) -> None:
    logging.config.dictConfig(log_config())
    access = logging.getLogger("uvicorn.access")
    # The record exactly as uvicorn's httptools protocol makes it.
    access.info(
        '%s - "%s %s HTTP/%s" %d',
        "127.0.0.1:5555",
        "GET",
        f"/api/v1/external/reservations.ics?x=1&token={KEY}&TOKEN={KEY}",
        "1.1",
        200,
    )
    line = capsys.readouterr().out
    assert "/api/v1/external/reservations.ics?x=1&token=[redacted]&TOKEN=[redacted]" in line
    assert "svc_pk_" not in line
