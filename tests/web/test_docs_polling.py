"""The polling loop of /docs' "Catching up after downtime", in Python and in JavaScript, run as
the page says to run it, against a live hangar: every event once and in order, across pages,
across polls that find nothing and then more, and across a restart from the saved cursor; a
cursor past the retention window starts again from `created_after`."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

import httpx
import pytest
from markupsafe import escape

from hangar.web.docs import SNIPPETS
from tests.fixtures.event_log import URL, record
from tests.fixtures.factories import Org
from tests.fixtures.live_server import LiveServer

# Waits end on what the snippet prints; this only bounds a broken one. Over a minute, so that
# a snippet that met the minute's rate limit and waits for the next has time to go on.
PATIENCE = 90.0
IDLE = "0.2"  # the snippets' pause once caught up (5 s in the docs): a few polls a second
RETENTION = timedelta(days=30)  # the live server's default delivery retention


class Poller:
    """One run of a snippet: the event ids it prints, as it prints them."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(  # noqa: S603 - our own snippet
            command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.printed: list[str] = []
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line)
        self.lines.put(None)  # ended

    def until(self, count: int) -> list[str]:
        """The ids printed, once `count` of them have been."""
        deadline = time.monotonic() + PATIENCE
        while len(self.printed) < count:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"printed {len(self.printed)} events of {count} in {PATIENCE} s")
            if line is None:
                pytest.fail(f"the snippet stopped: {self._stderr()}")
            self.printed.append(line.split()[0])
        return self.printed

    def stop(self) -> list[str]:
        """Stops it, then every id it printed."""
        self.proc.terminate()
        self.proc.wait(timeout=10)
        while (line := self.lines.get(timeout=10)) is not None:
            self.printed.append(line.split()[0])
        return self.printed

    def _stderr(self) -> str:
        self.proc.wait(timeout=10)
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


Start = Callable[[str], Poller]  # runs the loop with this key


@pytest.fixture(params=["python", "node"])
def start(
    request: pytest.FixtureRequest, api_server: LiveServer, tmp_path: Path
) -> Iterator[Start]:
    """Starts the documented loop for a key, keeping its position in tmp_path."""
    if request.param == "python":
        command = [sys.executable, str(SNIPPETS / "poll_events.py")]
    else:
        node = shutil.which("node")
        if node is None:
            pytest.skip("node is not installed")
        command = [node, str(SNIPPETS / "poll_events.js")]
    started: list[Poller] = []

    def run(key: str) -> Poller:
        env = {
            **os.environ,
            "HANGAR_BASE_URL": api_server.url,
            "HANGAR_API_KEY": key,
            "STATE_FILE": str(tmp_path / "position.json"),
            "POLL_SECONDS": IDLE,
        }
        started.append(Poller(command, env, tmp_path))
        return started[-1]

    yield run
    for poller in started:
        if poller.proc.poll() is None:
            poller.stop()


def state(tmp_path: Path) -> str:
    return (tmp_path / "position.json").read_text()


def saved_again(tmp_path: Path, before: str) -> None:
    """Until the loop saved another position: it polled again after `before` was saved."""
    deadline = time.monotonic() + PATIENCE
    while state(tmp_path) == before:
        assert time.monotonic() < deadline, "the loop did not poll again"
        time.sleep(0.02)  # a poll for the file's change, not a fixed wait


async def fired(org: Org, count: int) -> list[str]:
    """`count` events, several to a transaction as product actions make them; their ids."""
    ids: list[str] = []
    while len(ids) < count:
        batch = ("squawk.created", "squawk.resolved", "reservation.created")[: count - len(ids)]
        ids += await record(org, datetime.now(UTC), batch)
    return ids


async def test_the_loop_prints_every_event_once_in_order_and_resumes_from_its_cursor(
    start: Start, org: Org, other: Org, tmp_path: Path
) -> None:
    await fired(other, 5)  # another organization's: never printed
    expected = await fired(org, 205)  # pages of 100, 100 and 5

    poller = start(org.key)
    assert poller.until(205) == expected

    # Caught up: it keeps polling and finds nothing (the second save from now is an empty
    # poll's, whether or not the last page's was made yet), then finds only what came after.
    saved_again(tmp_path, state(tmp_path))
    saved_again(tmp_path, state(tmp_path))
    await fired(other, 3)
    expected += await fired(org, 4)
    assert poller.until(209) == expected
    saved_again(tmp_path, state(tmp_path))
    assert poller.stop() == expected

    # Stopped and started again: from the saved cursor on, nothing twice, nothing missed.
    later = await fired(org, 2)
    again = start(org.key)
    assert again.until(2) == later
    saved_again(tmp_path, state(tmp_path))
    assert again.stop() == later


async def test_a_cursor_past_the_retention_window_starts_again_from_created_after(
    start: Start, api_server: LiveServer, org: Org, tmp_path: Path
) -> None:
    # Two events just inside the window, then one now. A cursor after the first only has the
    # second still to return: too old a horizon (the window, less an hour) answers 410.
    edge = datetime.now(UTC) - RETENTION + timedelta(minutes=20)
    [oldest] = await record(org, edge)
    [old] = await record(org, edge + timedelta(minutes=1))
    newest = await fired(org, 1)
    async with httpx.AsyncClient(base_url=api_server.url, headers=org.auth) as api:
        first = (await api.get(URL, params={"limit": 1})).json()
        assert (await api.get(URL, params={"after": first["next_cursor"]})).status_code == 410
    [handled] = first["items"]
    assert handled["id"] == oldest
    (tmp_path / "position.json").write_text(
        json.dumps(
            {
                "after": first["next_cursor"],
                "created_after": None,
                "last_created_at": handled["created_at"],
            }
        )
    )

    poller = start(org.key)

    # From the last event it handled on (at or after its time: that one again, which a
    # store keyed by event id drops), then everything after it.
    assert poller.until(3) == [oldest, old, *newest]
    saved_again(tmp_path, state(tmp_path))
    assert poller.stop() == [oldest, old, *newest]
    assert json.loads(state(tmp_path))["created_after"] == handled["created_at"]


async def test_the_docs_show_both_loops_as_they_run(client: httpx.AsyncClient) -> None:
    page = (await client.get("/docs")).text
    guide = page[page.index('id="catching-up"') : page.index('id="local-receiver"')]
    for name in ("poll_events.py", "poll_events.js"):
        assert str(escape((SNIPPETS / name).read_text())) in guide
