"""/docs' webhook receivers, in Python, Node.js, Ruby, PHP and Go, each run as the page says
to run it, under its own runtime, against deliveries signed by hangar's own signing code (the
headers the dispatcher sends): a signed delivery is answered 204 and handled once however
often it comes; a tampered or unsigned one is refused, and so is a replayed copy, whether
stale (signed more than 5 minutes from the receiver's clock) or given a new delivery id;
during a secret's rotation, a receiver that still holds the previous secret accepts the
delivery by `X-Service-Signature-Previous` and the second `webhook-signature`.

The receivers read the real clock (they are the integrator's programs): deliveries are signed
at the test's real time, offset where the test is of a stale one.
A runtime that is not installed skips its receiver, saying which (.ci/run installs them)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from markupsafe import escape
from scripts.scratch import free_port

from hangar.web.docs import RECEIVERS, SNIPPETS
from hangar.webhooks.delivery.signing import envelope, headers
from tests.fixtures.subprocesses import Started, eventually, started

OLD_SECRET = "3f" * 32  # the receiver's: the secret before a rotation
NEW_SECRET = "a7" * 32
# Bytes beyond ASCII, as a squawk's text can hold: the receivers must hash them as received.
DATA = '{"squawk_id":"sq_1","title":"Pitot heat inop — é"}'
HANDLED = re.compile(r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) ", re.M)
# Go's first build of the receiver, with an empty build cache, is the slowest start.
START_WITHIN_S = 120.0


def runtime(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(
            f"{name} is not installed: its receiver snippet is not run (.ci/run installs it)"
        )
    return found


def command(language: str, port: int) -> list[str]:
    if language == "python":
        return [sys.executable, str(SNIPPETS / "receiver.py")]
    if language == "node":
        return [runtime("node"), str(SNIPPETS / "receiver.js")]
    if language == "ruby":
        return [runtime("ruby"), str(SNIPPETS / "receiver.rb")]
    if language == "php":
        return [runtime("php"), "-S", f"127.0.0.1:{port}", str(SNIPPETS / "receiver.php")]
    return [runtime("go"), "run", str(SNIPPETS / "receiver.go")]


@dataclass
class Receiver:
    language: str
    url: str
    server: Started
    queue_dir: Path  # where the PHP receiver queues each delivery as <id>.json

    def handled(self) -> list[str]:
        """The delivery ids handled so far: the ones the worker printed (each line starts
        with the id), or, for PHP, the ones queued for its worker."""
        if self.language == "php":
            return sorted(path.stem for path in self.queue_dir.glob("*.json"))
        # Beside what the runtimes log themselves (requests, start lines), on the same log.
        return HANDLED.findall(self.server.output())

    async def until_handled(self, delivery_id: str) -> list[str]:
        await eventually(
            lambda: delivery_id in self.handled(), 30, f"the {self.language} receiver handling"
        )
        return self.handled()


@pytest.fixture(scope="module")
def go_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One build cache for the module's runs: the receiver is compiled once, offline.
    return tmp_path_factory.mktemp("go")


@pytest.fixture(params=["python", "node", "ruby", "php", "go"])
async def receiver(
    request: pytest.FixtureRequest, tmp_path: Path, go_cache: Path
) -> AsyncIterator[Receiver]:
    """The documented receiver, holding OLD_SECRET, listening on a loopback port."""
    port = free_port()
    queue_dir = tmp_path / "queue"
    env = {
        **os.environ,
        "WEBHOOK_SECRET": OLD_SECRET,
        "PORT": str(port),
        "QUEUE_DIR": str(queue_dir),
        # Go: the standard library only, so nothing is fetched (GOPROXY=off makes sure).
        "GOCACHE": str(go_cache / "cache"),
        "GOPATH": str(go_cache / "path"),
        "GOPROXY": "off",
        "GOFLAGS": "",
    }
    argv = command(request.param, port)
    async with started(argv, env, tmp_path / "receiver.log", cwd=tmp_path) as server:

        def listening() -> bool:
            assert server.alive(), f"the {request.param} receiver exited:\n{server.output()}"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                return True
            return False

        await eventually(listening, START_WITHIN_S, f"the {request.param} receiver listening")
        yield Receiver(request.param, f"http://127.0.0.1:{port}/webhooks", server, queue_dir)


def delivery(
    secret: str,
    *,
    delivery_id: str | None = None,
    previous_secret: str | None = None,
    attempt: int = 0,
    signed_ago: timedelta = timedelta(0),
) -> tuple[bytes, dict[str, str]]:
    """A delivery's body and headers, exactly as the dispatcher makes them, signed now (less
    `signed_ago`). A later attempt (or a Redeliver) of the same delivery has its own
    `delivered_at`, so other bytes."""
    sent_at = datetime.now(UTC) - signed_ago + timedelta(seconds=attempt)
    body = envelope("squawk.created", sent_at, DATA)
    sent = headers(
        "squawk.created",
        delivery_id or str(uuid.uuid4()),
        secret,
        body,
        event_id=str(uuid.uuid4()),
        sent_at=sent_at,
        previous_secret=previous_secret,
    )
    return body, sent


async def test_a_signed_delivery_is_answered_at_once_and_handled_once(
    receiver: Receiver,
) -> None:
    body, sent = delivery(OLD_SECRET)
    first, first_body = sent["X-Service-Delivery"], body
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.post(receiver.url, content=body, headers=sent)).status_code == 204
        # A retry of it (after a timeout, or a Redeliver): other bytes, the same id. It is
        # acknowledged, so that hangar stops sending it, and dropped.
        again, resent = delivery(OLD_SECRET, delivery_id=first, attempt=2)
        assert (await http.post(receiver.url, content=again, headers=resent)).status_code == 204
        body, sent = delivery(OLD_SECRET)
        second = sent["X-Service-Delivery"]
        assert (await http.post(receiver.url, content=body, headers=sent)).status_code == 204
    # Each receiver handles in arrival order: once the second is handled, so is the repeat,
    # had it not been dropped.
    assert sorted(await receiver.until_handled(second)) == sorted([first, second])
    if receiver.language == "php":
        # The first delivery's bytes, as received: the repeat replaced nothing.
        queued = (receiver.queue_dir / f"{first}.json").read_bytes()
        assert queued == first_body
    else:
        printed = receiver.server.output()
        assert f"{first} squawk.created " in printed
        assert "Pitot heat inop — é" in printed or "Pitot heat inop \\u2014 \\u00e9" in printed


async def test_a_tampered_or_unsigned_delivery_is_refused(receiver: Receiver) -> None:
    body, sent = delivery(OLD_SECRET, previous_secret=OLD_SECRET)
    async with httpx.AsyncClient(timeout=10) as http:

        async def status(content: bytes, with_headers: dict[str, str]) -> int:
            return (
                await http.post(receiver.url, content=content, headers=with_headers)
            ).status_code

        # The same JSON re-serialised is other bytes: neither signature holds for them.
        assert await status(body.replace(b":", b": "), sent) == 401
        assert await status(body.replace(b"sq_1", b"sq_2"), sent) == 401
        _, forged = delivery(NEW_SECRET, previous_secret="00" * 32)
        assert await status(body, forged) == 401
        unsigned = {k: v for k, v in sent.items() if not k.startswith("X-Service-Signature")}
        assert await status(body, unsigned) == 401
        # The contract's signature alone is not enough: Standard Webhooks' is what dates it.
        undated = {k: v for k, v in sent.items() if not k.startswith("webhook-")}
        assert await status(body, undated) == 401
        assert await status(body, {**sent, "webhook-signature": "v1,AAAA"}) == 401
        # A signature of the right length but another value.
        flipped = sent["X-Service-Signature"][:-1] + (
            "0" if sent["X-Service-Signature"][-1] != "0" else "1"
        )
        assert await status(body, {**unsigned, "X-Service-Signature": flipped}) == 401
        body, sent = delivery(OLD_SECRET)
        assert await status(body, sent) == 204
    # Nothing refused was handled: only the signed delivery sent last.
    assert await receiver.until_handled(sent["X-Service-Delivery"]) == [sent["X-Service-Delivery"]]


async def test_a_replayed_copy_is_refused_or_dropped(receiver: Receiver) -> None:
    # A delivery copied off the wire (or out of the receiver's own logs) and sent again.
    body, sent = delivery(OLD_SECRET)
    async with httpx.AsyncClient(timeout=10) as http:

        async def status(content: bytes, with_headers: dict[str, str]) -> int:
            return (
                await http.post(receiver.url, content=content, headers=with_headers)
            ).status_code

        assert await status(body, sent) == 204
        # Within the tolerance, as it was: acknowledged, and dropped by its signed id.
        assert await status(body, sent) == 204
        # Given a new id, to pass as a new delivery: webhook-signature covers the id.
        new_id = str(uuid.uuid4())
        renamed = {**sent, "X-Service-Delivery": new_id, "webhook-id": new_id}
        assert await status(body, renamed) == 401
        # Signed 6 minutes ago (or 6 minutes ahead): stale, whatever its signatures.
        for signed_ago in (timedelta(minutes=6), timedelta(minutes=-6)):
            old_body, old_sent = delivery(OLD_SECRET, signed_ago=signed_ago)
            assert await status(old_body, old_sent) == 401
        # Given a fresh timestamp to look new: the signature covers the time too.
        restamped = {**old_sent, "webhook-timestamp": sent["webhook-timestamp"]}
        assert await status(old_body, restamped) == 401
        # Signed 4 minutes ago: within the tolerance.
        late_body, late_sent = delivery(OLD_SECRET, signed_ago=timedelta(minutes=4))
        assert await status(late_body, late_sent) == 204
    handled = await receiver.until_handled(late_sent["webhook-id"])
    assert sorted(handled) == sorted([sent["webhook-id"], late_sent["webhook-id"]])


async def test_during_a_rotation_the_previous_secrets_signature_is_accepted(
    receiver: Receiver,
) -> None:
    # The subscription's secret was rotated from OLD_SECRET to NEW_SECRET: during the grace,
    # X-Service-Signature is the new secret's and X-Service-Signature-Previous the old one's.
    # The receiver still holds the old one.
    body, sent = delivery(NEW_SECRET, previous_secret=OLD_SECRET)
    assert sent["X-Service-Signature"] != sent["X-Service-Signature-Previous"]
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.post(receiver.url, content=body, headers=sent)).status_code == 204
        # The previous signature covers the body too: tampered, it is refused.
        tampered = body.replace(b"sq_1", b"sq_2")
        assert (await http.post(receiver.url, content=tampered, headers=sent)).status_code == 401
        # Once the grace is over, only the new secret signs: time for the receiver to switch.
        after, after_sent = delivery(NEW_SECRET)
        assert "X-Service-Signature-Previous" not in after_sent
        refused = await http.post(receiver.url, content=after, headers=after_sent)
        assert refused.status_code == 401
    assert await receiver.until_handled(sent["X-Service-Delivery"]) == [sent["X-Service-Delivery"]]


async def test_the_docs_show_every_receiver_as_it_runs(client: httpx.AsyncClient) -> None:
    page = (await client.get("/docs")).text
    section = page.split('id="signatures"')[1].split('id="standard-webhooks"')[0]
    assert [r.file for r in RECEIVERS] == [
        "receiver.py",
        "receiver.js",
        "receiver.rb",
        "receiver.php",
        "receiver.go",
    ]
    for receiver in RECEIVERS:
        # The file the test runs, whole; its block reachable by keyboard, for it scrolls.
        code = escape((SNIPPETS / receiver.file).read_text(encoding="utf-8"))
        assert f'<pre tabindex="0"><code>{code}</code></pre>' in section, receiver.file
        assert f'href="#{receiver.anchor}"' in section
    assert "X-Service-Signature-Previous" in section
    assert 'id="rotating-secrets"' in section
