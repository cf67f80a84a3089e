"""`hangar demo`, as a newcomer runs it: what it prints works against the server it starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
from scripts.scratch import free_port

ENTRY_POINT = Path(sys.executable).with_name("hangar")


def printed(text: str, label: str) -> str:
    found = re.search(rf"^\s*{label}\s+(\S+)", text, re.MULTILINE)
    assert found, f"no {label} line in:\n{text}"
    return found.group(1)


def run_demo(tmp_path: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    """Starts the demo and returns it with everything it printed before serving."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")},
        "HANGAR_DATABASE_URL": f"sqlite:///{tmp_path / 'demo.db'}",
    }
    proc = subprocess.Popen(  # noqa: S603 (our own entry point)
        [str(ENTRY_POINT), "demo", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:  # the curl line is the last thing printed before serving
        lines.append(line)
        if line.strip().startswith("curl "):
            break
    return proc, "".join(lines)


def wait_until_serving(base: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/api/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the demo never started serving"
        time.sleep(0.2)


def test_the_demo_prints_a_sign_in_and_a_key_that_work(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc, out = run_demo(tmp_path, port)
    try:
        wait_until_serving(base)
        assert printed(out, "Sign in at") == f"{base}/login"
        key = printed(out, "API key")
        curl = next(line for line in out.splitlines() if line.strip().startswith("curl "))
        assert f"Bearer {key}" in curl
        assert f"{base}/api/v1/external/aircraft" in curl

        fleet = httpx.get(
            f"{base}/api/v1/external/aircraft", headers={"Authorization": f"Bearer {key}"}
        )
        assert fleet.status_code == 200
        assert len(fleet.json()) > 0
        page = httpx.get(
            f"{base}/api/v1/external/reservations",
            headers={"Authorization": f"Bearer {key}"},
            params={"limit": 500},
        )
        assert len(page.json()["items"]) == 500

        signed_in = httpx.post(
            f"{base}/api/session",
            json={"email": printed(out, "Email"), "password": printed(out, "Password")},
        )
        assert signed_in.status_code == 200
        assert signed_in.json()["memberships"][0]["role_name"] == "admin"
    finally:
        proc.terminate()
        proc.wait(30)

    # Run again: the same organization, a new key, and the old one revoked.
    proc, again = run_demo(tmp_path, port)
    try:
        wait_until_serving(base)
        assert again.startswith("Reusing")
        new_key = printed(again, "API key")
        assert new_key != key
        old = httpx.get(
            f"{base}/api/v1/external/aircraft", headers={"Authorization": f"Bearer {key}"}
        )
        assert old.status_code == 401
        new = httpx.get(
            f"{base}/api/v1/external/aircraft", headers={"Authorization": f"Bearer {new_key}"}
        )
        assert new.status_code == 200
    finally:
        proc.terminate()
        proc.wait(30)
