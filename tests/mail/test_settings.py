"""HANGAR_SMTP_URL and HANGAR_MAIL_FROM: both or neither, smtp:// or smtps:// with a host and
nothing after the port, one sender address; anything else stops hangar at its start with one
line that never quotes the URL (it may hold the mail server's password)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.foundation.config import ConfigError, load_settings
from tests.fixtures.subprocesses import refused_at_start

FROM = "Hangar <hangar@example.org>"


def mail_of(tmp_path: Path, **env: str) -> tuple[str | None, str | None]:
    settings = load_settings({"HANGAR_DATABASE_URL": f"sqlite:///{tmp_path}/x.db", **env})
    return settings.smtp_url, settings.mail_from


def test_neither_is_no_mail(tmp_path: Path) -> None:
    assert mail_of(tmp_path) == (None, None)
    assert mail_of(tmp_path, HANGAR_SMTP_URL="", HANGAR_MAIL_FROM=" ") == (None, None)


@pytest.mark.parametrize(
    "url",
    [
        "smtp://mail.example.org",
        "smtp://mail.example.org:587",
        "smtps://user:p%40ss@mail.example.org:465",
        "smtps://[2001:db8::1]:465/",
        "SMTPS://mail.example.org",
        "smtp+insecure://127.0.0.1:25",
    ],
)
@pytest.mark.parametrize("sender", [FROM, "hangar@example.org"])
def test_both_are_read_as_given(tmp_path: Path, url: str, sender: str) -> None:
    assert mail_of(tmp_path, HANGAR_SMTP_URL=url, HANGAR_MAIL_FROM=sender) == (url, sender)


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {"HANGAR_SMTP_URL": "smtp://mail.example.org"},
            "HANGAR_MAIL_FROM is required when HANGAR_SMTP_URL is set: set both, or neither",
        ),
        (
            {"HANGAR_MAIL_FROM": FROM},
            "HANGAR_SMTP_URL is required when HANGAR_MAIL_FROM is set: set both, or neither",
        ),
    ],
)
def test_one_without_the_other_is_refused(tmp_path: Path, env: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        mail_of(tmp_path, **env)
    assert str(refused.value) == said


@pytest.mark.parametrize(
    ("url", "starts"),
    [
        ("http://user:hunter2-secret@mail.example.org", "HANGAR_SMTP_URL must start with"),
        ("mail.example.org:25", "HANGAR_SMTP_URL must start with"),
        ("smtp+tls://user:hunter2-secret@mail.example.org", "HANGAR_SMTP_URL must start with"),
        ("smtp://user:hunter2-secret@", "HANGAR_SMTP_URL must be smtp://, smtps:// or"),
        # smtp+insecure:// sends in clear: a password there would too.
        ("smtp+insecure://user:hunter2-secret@127.0.0.1", "HANGAR_SMTP_URL: smtp+insecure://"),
        ("smtp://user:hunter2-secret@mail.example.org:port", "HANGAR_SMTP_URL must be"),
        ("smtp://user:hunter2-secret@mail.example.org:99999", "HANGAR_SMTP_URL must be"),
        ("smtp://user:hunter2-secret@mail.example.org:0", "HANGAR_SMTP_URL must be"),
        ("smtp://user:hunter2-secret@mail.example.org/inbox", "HANGAR_SMTP_URL must be"),
        ("smtp://user:hunter2-secret@mail.example.org?tls=1", "HANGAR_SMTP_URL must be"),
    ],
)
def test_a_url_that_is_not_smtp_or_smtps_to_a_host_is_refused_without_quoting_it(
    tmp_path: Path, url: str, starts: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        mail_of(tmp_path, HANGAR_SMTP_URL=url, HANGAR_MAIL_FROM=FROM)
    said = str(refused.value)
    assert said.startswith(starts), said
    assert "hunter2" not in said


@pytest.mark.parametrize(
    "sender",
    ["hangar", "a@example.org, b@example.org", "a@example.org b@example.org", "x@y\r\nBcc: z@w"],
)
def test_a_sender_that_is_not_one_address_is_refused(tmp_path: Path, sender: str) -> None:
    with pytest.raises(ConfigError) as refused:
        mail_of(tmp_path, HANGAR_SMTP_URL="smtp://mail.example.org", HANGAR_MAIL_FROM=sender)
    assert str(refused.value).startswith("HANGAR_MAIL_FROM must be one mail address")


def test_hangar_does_not_start_with_half_a_mail_setting_and_says_why_in_one_line(
    tmp_path: Path,
) -> None:
    stderr = refused_at_start(
        tmp_path, ["serve"], HANGAR_SMTP_URL="smtps://user:hunter2-secret@mail.example.org"
    )
    assert stderr == (
        "hangar: HANGAR_MAIL_FROM is required when HANGAR_SMTP_URL is set: set both, or neither\n"
    )
