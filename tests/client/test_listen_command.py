"""`hangar-client listen` as a developer runs it: a real process polling a live hangar over a
socket and forwarding to a loopback receiver, which verifies what it gets with the secret the
command printed; Ctrl-C and SIGTERM stop it cleanly and `--resume` goes on from there; bad
input is one line, never a traceback; and the installed console script is that command."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson
import pytest
from standardwebhooks import Webhook

from hangar.fleet.models import Aircraft
from hangar.kit.container import Services
from hangar_client import AsyncClient, verify_signature
from tests.fixtures.actions import url
from tests.fixtures.clients import signed_in_client
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.live_server import LiveServer
from tests.fixtures.receivers import Received, Receiver
from tests.fixtures.subprocesses import Started, eventually, started

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
LISTEN = [sys.executable, "-m", "hangar_client", "listen"]


def environment(tmp_path: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")}
    return {
        **env,
        "PYTHONPATH": str(CLIENT / "src"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        **values,
    }


async def report_squawks(admin: httpx.AsyncClient, org: Org, count: int) -> None:
    plane = str((await org.add(Aircraft))["id"])
    for n in range(count):
        squawk = {"aircraft_id": plane, "description": f"squawk {n}", "severity": "minor"}
        response = await admin.post(url(org, "squawks"), json=squawk)
        assert response.status_code == 201, response.text


async def stop(listen: Started, how: signal.Signals) -> int:
    os.kill(listen.pid, how)
    return await asyncio.wait_for(listen.proc.wait(), 20)


def verified(requests: list[Received], output: str) -> list[str]:
    """The event ids of what was received, each request checked as a receiver would: with
    the secret the run printed, by the client's verify_signature and, in its whsec_ form, by
    the official Standard Webhooks library."""
    secret = re.findall(r"^Signing secret: ([0-9a-f]{64})$", output, re.M)[0]
    (whsec,) = re.findall(
        r"^  the same for Standard Webhooks libraries: (whsec_\S+)$", output, re.M
    )
    ids = []
    for request in requests:
        headers = {key.lower(): value for key, value in request.headers.items()}
        assert verify_signature(secret, request.body, headers["x-service-signature"])
        envelope = orjson.loads(request.body)
        assert Webhook(whsec).verify(request.body, headers) == envelope
        assert headers["x-service-event"] == envelope["event"]
        assert headers["webhook-id"] == headers["x-service-delivery"]
        assert headers["user-agent"] == "Service-Webhooks/1.0"
        assert headers["content-type"] == "application/json"
        ids.append(headers["x-service-event-id"])
    return ids


async def test_listen_forwards_stops_on_ctrl_c_and_resumes_without_repeats(
    api_server: LiveServer,
    services: Services,
    loopback: Receiver,
    org: Org,
    other: Org,
    clock: FakeClock,
    tmp_path: Path,
) -> None:
    forward_to = f"http://127.0.0.1:{loopback.port}/hook"
    argv = [*LISTEN, "--forward-to", forward_to, "--interval", "0.3"]
    env = environment(tmp_path, HANGAR_BASE_URL=api_server.url, HANGAR_API_KEY=org.key)
    log = tmp_path / "listen.log"
    clock.set(datetime.now(UTC))  # the live server's clock is the real one
    async with (
        signed_in_client(services, org, "admin") as admin,
        signed_in_client(services, other, "admin") as outsider,
        started(argv, env, log, cwd=tmp_path) as listen,
    ):
        await eventually(lambda: "Ctrl-C to stop" in listen.output(), 30, "listen started")
        clock.set(datetime.now(UTC))  # events created after listen's start
        await report_squawks(admin, org, 2)
        await report_squawks(outsider, other, 1)
        await eventually(lambda: len(loopback.requests) == 2, 30, "two events forwarded")
        assert await stop(listen, signal.SIGINT) == 0
        first_run = listen.output()

        await report_squawks(admin, org, 1)  # while nobody listens
        log.write_text("")
        async with started([*argv, "--resume"], env, log, cwd=tmp_path) as resumed:
            await eventually(lambda: len(loopback.requests) == 3, 30, "the third forwarded")
            # One more while it runs: were anything forwarded twice, it would come first.
            await report_squawks(admin, org, 1)
            await eventually(lambda: len(loopback.requests) == 4, 30, "the fourth forwarded")
            assert await stop(resumed, signal.SIGTERM) == 0
            second_run = resumed.output()

    secret = re.findall(r"^Signing secret: ([0-9a-f]{64})$", first_run, re.M)[0]
    whsec = "whsec_" + base64.b64encode(secret.encode()).decode()
    assert f"  the same for Standard Webhooks libraries: {whsec}\n" in first_run
    assert f"Forwarding all events to {forward_to}\n" in first_run
    async with AsyncClient(api_server.url, org.key) as api:
        logged = [event.id async for event in api.events.iter()]
    assert len(logged) == 4
    assert verified(loopback.requests[:2], first_run) == logged[:2]  # each once, in order
    assert verified(loopback.requests[2:], second_run) == logged[2:]
    for output in (first_run, second_run):
        lines = output.splitlines()
        assert re.fullmatch(
            r"Stopped\. Position saved in .+; --resume continues there\.", lines[-1]
        )
        assert org.key not in output
        assert "Traceback" not in output
    assert [line for line in first_run.splitlines() if "squawk.created" in line] == [
        line
        for line in first_run.splitlines()
        if re.search(r"  squawk\.created  \S+  -> 200$", line)
    ]
    assert "Resuming from the position saved in" in second_run
    saved = list((tmp_path / "state" / "hangar-client").glob("listen-*.json"))
    assert len(saved) == 1


def command(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> Ran:
    done = subprocess.run(  # noqa: S603 (our own command, no shell)
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    return Ran(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str


WELL_FORMED = "svc_pk_" + "0" * 43  # a key's shape; never sent in these runs


@pytest.mark.parametrize(
    ("args", "env", "line"),
    [
        (
            ["--forward-to", "http://127.0.0.1:9/hook", "--key", "svc_pk_short"],
            {"HANGAR_BASE_URL": "http://h"},
            "the API key (--key or HANGAR_API_KEY) has 5 characters after svc_pk_, not 43: "
            "was it copied whole?",
        ),
        (
            ["--forward-to", "http://127.0.0.1:9/hook"],
            {"HANGAR_BASE_URL": "http://h", "HANGAR_API_KEY": "whsec_c2VjcmV0"},
            "the API key (--key or HANGAR_API_KEY) does not start with svc_pk_: "
            "is it another secret?",
        ),
        (
            ["--forward-to", "http://127.0.0.1:9/hook"],
            {"HANGAR_BASE_URL": "http://h"},
            "no API key: pass --key or set HANGAR_API_KEY",
        ),
        (
            ["--forward-to", "http://127.0.0.1:9/hook", "--key", "svc_pk_x"],
            {},
            "no base URL: pass --base-url or set HANGAR_BASE_URL",
        ),
        (
            [
                "--forward-to",
                "ftp://127.0.0.1/hook",
                "--base-url",
                "http://h",
                "--key",
                WELL_FORMED,
            ],
            {},
            "--forward-to must be an http:// or https:// address, not 'ftp://127.0.0.1/hook'",
        ),
        (
            ["--forward-to", "x", "--base-url", "hangar.example", "--key", WELL_FORMED],
            {},
            "the base URL must be an http:// or https:// address, not 'hangar.example'",
        ),
        (
            ["--forward-to", "x", "--interval", "soon"],
            {},
            "argument --interval: takes seconds above 0, not 'soon' (see --help)",
        ),
        (
            [
                "--forward-to",
                "x",
                "--base-url",
                "http://h",
                "--key",
                WELL_FORMED,
                "--secret",
                "whsec_!",
            ],
            {},
            "--secret: what follows whsec_ is not base64 of a secret",
        ),
        ([], {}, "the following arguments are required: --forward-to (see --help)"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], env: dict[str, str], line: str, tmp_path: Path
) -> None:
    ran = command([*LISTEN, *args], environment(tmp_path, **env))
    assert (ran.code, ran.stdout, ran.stderr) == (2, "", f"hangar-client listen: {line}\n")


def test_hangar_refusing_is_one_line(api_server: LiveServer, org: Org, tmp_path: Path) -> None:
    env = environment(tmp_path, HANGAR_BASE_URL=api_server.url, HANGAR_API_KEY=org.key)
    refusals = {
        "--event=squawk.*": "422 UNKNOWN_EVENT: ",
        "--key=svc_pk_" + "0" * 43: "401 UNAUTHORIZED: ",
    }
    for arg, code in refusals.items():
        ran = command([*LISTEN, "--forward-to", "http://127.0.0.1:9/", arg], env)
        assert ran.code == 1, ran.stderr
        assert ran.stderr.startswith(f"hangar-client listen: hangar refused: {code}"), ran.stderr
        assert ran.stderr.count("\n") == 1
        assert org.key not in ran.stdout + ran.stderr
    assert "squawk.*" in command([*LISTEN, "--forward-to", "x", "--event", "squawk.*"], env).stderr


def test_the_installed_console_script_is_the_command(tmp_path: Path) -> None:
    scripts = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"hangar-client": "hangar_client.cli:main"}
    # Built from a copy, so that the build leaves nothing in the checkout.
    sources = tmp_path / "sources"
    shutil.copytree(CLIENT, sources, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path / "dist"
    build = f"from setuptools import build_meta; build_meta.build_wheel({str(dist)!r})"
    assert command([sys.executable, "-c", build], dict(os.environ), cwd=sources).code == 0
    (wheel,) = dist.glob("hangar_client-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        assert "hangar_client/__main__.py" in whl.namelist()
    target = tmp_path / "installed"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    assert command([*pip, "--target", str(target), str(wheel)], dict(os.environ)).code == 0
    env = {**environment(tmp_path), "PYTHONPATH": str(target)}
    ran = command([str(target / "bin" / "hangar-client"), "listen", "--forward-to", "x"], env)
    assert (ran.code, ran.stderr) == (
        2,
        "hangar-client listen: no base URL: pass --base-url or set HANGAR_BASE_URL\n",
    )
