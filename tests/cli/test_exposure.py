"""`hangar serve` says so at start when it listens beyond this machine with no proxy in front
that hangar knows of (issue 24, point 7): the supported exposure is behind a TLS proxy."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from hangar.cli.serve import run_server
from hangar.foundation.config import DEFAULT_TRUSTED_PROXIES, Settings
from hangar.http.server import Server, exposure_warning
from tests.fixtures.environment import SECRET
from tests.fixtures.logs import kept_logging

OTHER_MACHINE = (ipaddress.ip_network("10.0.0.5/32"),)


@pytest.mark.parametrize(
    ("host", "proxies", "warned"),
    [
        ("127.0.0.1", DEFAULT_TRUSTED_PROXIES, False),
        ("::1", DEFAULT_TRUSTED_PROXIES, False),
        ("localhost", DEFAULT_TRUSTED_PROXIES, False),
        ("0.0.0.0", DEFAULT_TRUSTED_PROXIES, True),  # noqa: S104
        ("::", DEFAULT_TRUSTED_PROXIES, True),
        ("192.0.2.10", DEFAULT_TRUSTED_PROXIES, True),
        ("hangar.internal", DEFAULT_TRUSTED_PROXIES, True),
        ("0.0.0.0", (), True),  # noqa: S104
        # The operator named a proxy on another machine: it is in front.
        ("0.0.0.0", OTHER_MACHINE, False),  # noqa: S104
    ],
)
def test_a_listener_beyond_loopback_without_a_proxy_is_warned_of(
    host: str, proxies: tuple[ipaddress.IPv4Network, ...], warned: bool
) -> None:
    warning = exposure_warning(host, proxies)
    assert (warning is not None) == warned
    if warning:
        assert host in warning
        assert "HANGAR_TRUSTED_PROXIES" in warning
        assert "TLS" in warning


def test_serve_logs_the_warning_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Everything `hangar serve` does at start, but serving (no port is opened).
    monkeypatch.setattr(Server, "run", lambda self, sockets=None: setattr(self, "started", True))
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'h.db'}", secret_key=SECRET)
    with kept_logging():
        run_server(settings, "0.0.0.0", 8000, with_worker=False)  # noqa: S104
        assert "hangar serve listens on 0.0.0.0, beyond this machine" in capfd.readouterr().err
        run_server(settings, "127.0.0.1", 8000, with_worker=False)
        assert "beyond this machine" not in capfd.readouterr().err
