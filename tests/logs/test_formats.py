"""HANGAR_LOG_FORMAT: text is what hangar always wrote, json one object per line from every
logger of a real `hangar serve`, anything else a one-line refusal at start-up."""

from __future__ import annotations

import io
import json
import logging
import logging.config
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import trustme
from uvicorn.config import LOGGING_CONFIG

from hangar.foundation.config import ConfigError, load_settings
from tests.fixtures.logs import captured_logs
from tests.fixtures.serve_process import serve_process
from tests.fixtures.subprocesses import eventually


def _emit() -> None:
    access = ('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5555", "GET", "/api/orgs?x=1", "1.1", 200)
    logging.getLogger("uvicorn.access").info(*access)
    logging.getLogger("uvicorn.error").info("Started server process [%d]", 42)
    logging.getLogger("hangar.webhooks").warning("dispatcher: %s", "claiming failed")
    logging.getLogger("hangar.webhooks").debug("not shown at the default level, info")


def test_text_is_what_uvicorn_and_python_wrote_before(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with captured_logs("text", "serve") as ours:
        _emit()
    before = io.StringIO()
    with captured_logs("text", "serve"):  # saves and restores the loggers around this
        plain = {**LOGGING_CONFIG, "handlers": {}}
        plain["handlers"] = {
            name: {**handler, "stream": before}
            for name, handler in LOGGING_CONFIG["handlers"].items()
        }
        logging.config.dictConfig({**plain, "root": {"handlers": []}})
        saved = logging.lastResort
        logging.lastResort = logging.StreamHandler(before)
        logging.lastResort.setLevel(logging.WARNING)
        try:
            _emit()
        finally:
            logging.lastResort = saved
    assert ours.getvalue() == before.getvalue()
    assert ours.getvalue().count("\n") == 3


def test_the_worker_writes_what_basic_config_wrote() -> None:
    with captured_logs("text", "worker") as ours:
        logging.getLogger("hangar.worker").info("stopping")
    assert ours.getvalue().endswith(" hangar.worker stopping\n")
    assert ours.getvalue()[:4].isdigit()


def test_an_unknown_format_is_refused_in_one_line(repo_root: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="HANGAR_LOG_FORMAT must be text or json, not 'xml'"):
        load_settings(
            {"HANGAR_DATABASE_URL": f"sqlite:///{tmp_path}/x.db", "HANGAR_LOG_FORMAT": "xml"}
        )
    done = subprocess.run(
        [sys.executable, "-c", "from hangar.cli import main; main()", "jobs", "run", "mel-expiry"],
        env={"HANGAR_LOG_FORMAT": "xml", "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "hangar: HANGAR_LOG_FORMAT must be text or json, not 'xml'\n"


async def test_hangar_serve_logs_json_lines_with_the_request_id(
    database_url: str,
    ca: trustme.CA,
    tmp_path: Path,
    repo_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HANGAR_LOG_FORMAT", "json")
    async with serve_process(database_url, 1, ca, tmp_path, repo_root) as served:
        async with httpx.AsyncClient(base_url=served.base) as client:
            # Not a probe: a successful /api/health is not logged (tests/logs/test_quiet_probes.py).
            answer = await client.get(
                "/api/v1/external/openapi.json", headers={"X-Request-ID": "probe-1"}
            )
            missing = await client.get("/nowhere", headers={"X-Request-ID": "probe-2"})
        assert answer.headers["x-request-id"] == "probe-1"
        assert missing.headers["x-request-id"] == "probe-2"

        def access() -> dict[str, dict[str, object]]:
            lines = [json.loads(line) for line in served.server.output().splitlines()]
            return {
                str(line["request_id"]): line
                for line in lines
                if line["logger"] == "uvicorn.access" and "request_id" in line
            }

        await eventually(lambda: {"probe-1", "probe-2"} <= set(access()), 30, "access lines")
        probe = access()["probe-2"]
        assert (probe["method"], probe["path"], probe["status"]) == ("GET", "/nowhere", 404)
    lines = [json.loads(line) for line in served.server.output().splitlines()]
    loggers = {line["logger"] for line in lines}
    assert {"uvicorn.error", "uvicorn.access"} <= loggers
    assert any("Application startup complete" in line["message"] for line in lines)
