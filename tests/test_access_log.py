"""The serve log never holds an API key, though the calendar feed carries one in its URL."""

from __future__ import annotations

import logging
import logging.config
import random
from urllib.parse import quote

import pytest

from hangar.foundation.config import LogFormat
from hangar.http.access_log import decoded, log_config, redact
from hangar.logs import formats
from tests.fixtures.logs import kept_logging

KEY = "svc_pk_" + "A" * 43
FORMATS: tuple[LogFormat | None, ...] = (None, "text", "json")  # uvicorn's, and hangar's two
BODY = KEY.removeprefix("svc_pk_")


def _logged(
    capsys: pytest.CaptureFixture[str], path_with_query: str, fmt: LogFormat | None = None
) -> str:
    """The access line uvicorn writes for this request, with uvicorn's own text format, or as
    `hangar serve` writes it with HANGAR_LOG_FORMAT `fmt`."""
    with kept_logging():
        logging.config.dictConfig(log_config() if fmt is None else formats.config(fmt, "serve"))
        access = logging.getLogger("uvicorn.access")
        # The record exactly as uvicorn's httptools protocol makes it.
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5555", "GET", path_with_query, "1.1", 200)
        captured = capsys.readouterr()
    return captured.out + captured.err


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
        "/password-reset/{token}",
        "/password-reset/{token}?x=1",
    ],
)
def test_an_invitation_token_in_the_path_is_redacted(
    capsys: pytest.CaptureFixture[str], path: str
) -> None:
    token = "Zq3-_" + "b" * 38  # as secrets.token_urlsafe(32) makes them
    line = _logged(capsys, path.format(token=token))
    assert token not in line
    assert path.format(token="[redacted]") in line


def _spellings(text: str, count: int, seed: int) -> list[str]:
    """`count` percent-encodings of `text`, as a client may send it: any character escaped or
    not, in either case of hex, some escapes escaped again (`%2573`, decoded twice)."""
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        out = []
        for ch in text:
            if rng.random() < 0.4:
                escape = f"%{ord(ch):02X}" if rng.random() < 0.5 else f"%{ord(ch):02x}"
                out.append(escape.replace("%", "%25", 1) if rng.random() < 0.2 else escape)
            else:
                out.append(ch)
        found.append("".join(out))
    return found


@pytest.mark.parametrize("before", ['"', "<", "'", ">", "\\", "%22", ""])
def test_a_quote_or_bracket_before_the_token_hides_nothing(
    capsys: pytest.CaptureFixture[str], before: str
) -> None:
    """The issue's spelling: `?a="&token=%73vc_pk_...` slipped past a pattern that stopped at
    the quote, the key percent-encoded."""
    encoded = "%73" + KEY[1:]
    line = _logged(capsys, f"/api/v1/external/reservations.ics?a={before}&token={encoded}")
    assert BODY not in line
    assert "token=[redacted]" in line


def test_no_spelling_of_a_key_or_a_token_parameter_reaches_the_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = _spellings("token", 40, seed=1)
    values = _spellings(KEY, 40, seed=2)
    for name, value in zip(names, values, strict=True):
        for query in (f"{name}={value}", f"x=1&{name}={BODY}", f"a={value}", f'a="&b={value}'):
            for fmt in FORMATS:
                line = _logged(capsys, f"/api/v1/external/reservations.ics?{query}", fmt)
                assert BODY not in decoded(line), (fmt, query)
                assert "[redacted]" in line, (fmt, query)


def test_an_invitation_token_in_next_never_reaches_the_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue: /login?next=%2Finvitations%2F<token> logged the token."""
    token = "Zq3-_" + "b" * 38
    for path in [*_spellings(f"/invitations/{token}", 30, seed=3), f"/invitations/{token}"]:
        for query in (f"next={path}", f"next={quote(path, safe='')}", f'x="&next={path}'):
            for fmt in FORMATS:
                line = _logged(capsys, f"/login?{query}", fmt)
                assert token not in decoded(line), (fmt, query)
                assert "next=[redacted]" in line, (fmt, query)
