"""The serve log never holds an API key, though the calendar feed carries one in its URL."""

from __future__ import annotations

import logging
import logging.config
from urllib.parse import quote

import pytest

from hangar.access_log import log_config, redact

KEY = "svc_pk_" + "A" * 43
BODY = KEY.removeprefix("svc_pk_")


def _logged(capsys: pytest.CaptureFixture[str], path_with_query: str) -> str:
    logging.config.dictConfig(log_config())
    access = logging.getLogger("uvicorn.access")
    # The record exactly as uvicorn's httptools protocol makes it.
    access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5555", "GET", path_with_query, "1.1", 200)
    return capsys.readouterr().out


def test_the_access_log_redacts_the_feed_token(capsys: pytest.CaptureFixture[str]) -> None:
    line = _logged(capsys, f"/api/v1/external/reservations.ics?x=1&token={KEY}&TOKEN={KEY}")
    assert "/api/v1/external/reservations.ics?x=1&token=[redacted]&TOKEN=[redacted]" in line
    assert "svc_pk_" not in line
    assert BODY not in line


@pytest.mark.parametrize(
    "query",
    [
        f"%74oken={KEY}",  # the server decodes the name: this is `token`
        f"%74%6F%6B%65%6E={KEY}",
        f"TOKEN={KEY}",
        f"ToKeN={KEY}",
        f"token=x&token={KEY}",  # repeated: whichever one the server reads
        f"token={KEY}&token={KEY}",
        f"token={quote(KEY, safe='')}".replace("_", "%5F"),  # the value percent-encoded
        f"token={BODY}",  # the key's body without its prefix
        f"+token={BODY}",  # a plus is a space once decoded
        f"a=1&b={KEY}",  # a key under any name
        f"token={KEY}#frag",
    ],
)
def test_redaction_reads_the_query_as_the_server_does(
    capsys: pytest.CaptureFixture[str], query: str
) -> None:
    line = _logged(capsys, f"/api/v1/external/reservations.ics?{query}")
    assert "svc_pk_" not in line
    assert "svc%5Fpk" not in line
    assert BODY not in line
    assert "/api/v1/external/reservations.ics?" in line


def test_redaction_keeps_harmless_parameters() -> None:
    assert redact("/api/v1/external/reservations?limit=5&after=abc") == (
        "/api/v1/external/reservations?limit=5&after=abc"
    )
    assert redact("/x?tokens=1&my_token=2") == "/x?tokens=1&my_token=2"


def test_a_key_in_the_path_is_redacted_too() -> None:
    assert redact(f"/api/v1/external/{KEY}") == "/api/v1/external/[redacted]"


@pytest.mark.parametrize(
    "path",
    [
        "/invitations/{token}",
        "/api/invitations/{token}",
        "/api/invitations/{token}/accept",
        "/invitations/{token}/password?x=1",
    ],
)
def test_an_invitation_token_in_the_path_is_redacted(
    capsys: pytest.CaptureFixture[str], path: str
) -> None:
    token = "Zq3-_" + "b" * 38  # as secrets.token_urlsafe(32) makes them
    line = _logged(capsys, path.format(token=token))
    assert token not in line
    assert path.format(token="[redacted]") in line
