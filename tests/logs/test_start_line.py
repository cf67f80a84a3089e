"""The start line: one per `hangar serve` or `hangar worker`, naming the release, the database
(never its password), Redis, the server processes, whether it delivers, the log level."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import trustme

from hangar import __version__
from hangar.foundation.config import LOG_FORMATS, LogFormat, Settings
from hangar.logs.start_line import log_start
from tests.fixtures.environment import SECRET
from tests.fixtures.logs import captured_logs
from tests.fixtures.serve_process import serve_process

# Every place a PostgreSQL URL can carry a secret: user information and libpq's parameters.
WITH_SECRETS = (
    "postgresql://hangar-user:pw-n0t-printed@db.internal:5432/hangar"
    "?password=pw-nor-this&sslpassword=pw-nor-that"
)
NEVER = ("hangar-user", "pw-n0t-printed", "pw-nor-this", "pw-nor-that", "redis-pw", SECRET)


def settings_with_secrets() -> Settings:
    return Settings(
        database_url=WITH_SECRETS,
        secret_key=SECRET,
        redis_url="redis://:redis-pw@cache.internal:6379/0",
        metrics_token="m" * 40,
    )


@pytest.mark.parametrize("fmt", LOG_FORMATS)
def test_the_start_line_names_the_database_by_host_never_by_url(fmt: LogFormat) -> None:
    with captured_logs(fmt, "serve") as output:
        log_start(
            settings_with_secrets(),
            "serve",
            processes=2,
            delivers_webhooks=True,
            metrics="on",
        )
    text = output.getvalue()
    assert [s for s in NEVER if s in text] == []
    [line] = text.splitlines()
    expected = (
        f"hangar {__version__} starting: role=serve database=postgresql "
        "host=db.internal:5432/hangar redis=configured processes=2 delivers_webhooks=yes "
        "metrics=on log_level=info"
    )
    if fmt == "text":
        assert line == expected
        return
    record = json.loads(line)
    assert record["message"] == expected
    assert {k: v for k, v in record.items() if k not in ("timestamp", "message")} == {
        "level": "info",
        "logger": "hangar",
        "version": __version__,
        "role": "serve",
        "database": "postgresql",
        "host": "db.internal:5432/hangar",
        "redis": "configured",
        "processes": 2,
        "delivers_webhooks": "yes",
        "metrics": "on",
        "log_level": "info",
    }


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("postgresql://u:p@[2001:db8::5]:6432/hangar", "[2001:db8::5]:6432/hangar"),
        ("postgres://u@db/hangar", "db/hangar"),
        ("postgresql:///hangar?host=/run/postgresql&password=p", "local-socket/hangar"),
    ],
)
def test_the_host_is_read_from_its_own_parts(url: str, host: str) -> None:
    with captured_logs("json", "worker") as output:
        log_start(
            Settings(database_url=url, secret_key=SECRET),
            "worker",
            processes=None,
            delivers_webhooks=True,
            metrics="off",
        )
    record = json.loads(output.getvalue())
    assert record["host"] == host
    assert "processes" not in record
    assert ":p@" not in output.getvalue()
    assert "password" not in output.getvalue()


def test_the_start_line_is_left_out_above_info() -> None:
    with captured_logs("text", "serve", "warning") as output:
        log_start(
            settings_with_secrets(), "serve", processes=1, delivers_webhooks=False, metrics="off"
        )
    assert output.getvalue() == ""


async def test_hangar_serve_logs_one_start_line_and_no_probe(
    database_url: str,
    ca: trustme.CA,
    tmp_path: Path,
    repo_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HANGAR_LOG_FORMAT", "json")
    async with (
        serve_process(database_url, 1, ca, tmp_path, repo_root) as served,
        httpx.AsyncClient(base_url=served.base) as client,
    ):
        for path in ("/api/health", "/api/health/ready", "/api/health/ready?full=1"):
            assert (await client.get(path)).status_code == 200, path
        assert (await client.get("/metrics")).status_code == 404  # no token: not quiet
    lines = [json.loads(line) for line in served.server.output().splitlines()]
    [start] = [line for line in lines if "starting:" in line["message"]]
    kind = "postgresql" if database_url.startswith("postgres") else "sqlite"
    assert (start["role"], start["database"], start["processes"]) == ("serve", kind, 1)
    assert (start["delivers_webhooks"], start["log_level"]) == ("yes", "info")
    access = [line for line in lines if line["logger"] == "uvicorn.access"]
    assert [(line["path"], line["status"]) for line in access] == [("/metrics", 404)]
    assert not [line for line in lines if line["logger"].startswith("alembic")]
