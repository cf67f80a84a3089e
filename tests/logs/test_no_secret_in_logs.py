"""Issue 15: JSON logs with a request id, and nothing secret in any of them. Every route of
the app and every delivery outcome, served by a real uvicorn with hangar's JSON logging;
then the whole output is searched for every credential the test used."""

from __future__ import annotations

import re
import ssl
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote_plus

import httpx
import trustme
from fastapi import Request
from scripts.scratch import free_port

from hangar.app import create_app
from hangar.auth import sessions
from hangar.http.access_log import QUIET_PATHS
from hangar.kit.container import Services
from hangar.webhooks.delivery.sender import Sender
from tests.fixtures.clients import session_for
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeResolver
from tests.fixtures.logs import captured_logs, json_lines, served
from tests.fixtures.receivers import HOST, Receiver, https_endpoint, loopback_only
from tests.fixtures.routes import app_routes
from tests.fixtures.webhooks import SECRET, dispatcher, fire, subscribe

HEX_ID = re.compile(r"[0-9a-f]{32}")
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


def _fill(path: str, org: Org, token: str) -> str:
    def part(p: str) -> str:
        if p == "{org_id}":
            return str(org.id)
        if p == "{token}":
            return token
        return str(uuid.uuid4()) if p.startswith("{") else p

    return "/".join(part(p) for p in path.split("/"))


async def _boom(request: Request) -> None:
    # A bug whose message quotes the request: its headers and its body.
    raise RuntimeError(f"cannot handle {dict(request.headers)} with {await request.body()!r}")


async def _sweep(
    base: str, routes: list[tuple[str, str]], org: Org, creds: dict[str, str]
) -> dict[str, str]:
    """Every route, with every credential a client may send; {request id sent: answered} of
    every request that must be logged (a probe that succeeded is not)."""
    sent: dict[str, str] = {}
    cookie = f"{sessions.COOKIE}={creds['session']}"
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        for n, (method, path) in enumerate(routes):
            url = _fill(path, org, creds["invitation"])
            rid = f"sweep-{n}-{method}"
            headers = {
                "X-Request-ID": rid,
                "Authorization": f"Bearer {org.key}",
                "Cookie": cookie,
                "X-CSRF-Token": creds["csrf"],
            }
            fields = {"email": creds["email"], "password": PASSWORD, "csrf_token": creds["csrf"]}
            body: dict[str, Any] = {}
            if method in UNSAFE:
                body = {"json": fields} if url.startswith("/api/") else {"data": fields}
            params = {"token": org.key} if method == "GET" else {}
            response = await client.request(method, url, headers=headers, params=params, **body)
            assert response.status_code < 500 or path == "/boom", (method, path, response.text)
            if path not in QUIET_PATHS or response.status_code >= 400:
                sent[rid] = response.headers["x-request-id"]
    return sent


async def test_every_route_and_delivery_outcome_logs_json_and_no_secret(
    services: Services,
    org: Org,
    other: Org,
    ca: trustme.CA,
    receiver: Receiver,
    resolver: FakeResolver,
    closing: Callable[[Sender], Sender],
) -> None:
    app = create_app(services)
    app.add_api_route("/boom", _boom, methods=["POST"])
    routes = app_routes(app.routes)
    assert len(routes) >= 60, routes  # the whole table, not a list kept by hand
    session, csrf = await session_for(services, org.admin_id)
    email = f"signs-in-{uuid.uuid4().hex[:8]}@example.org"
    await org.member("member", email=email, password=PASSWORD)

    with captured_logs("json") as output:
        async with served(app) as base, httpx.AsyncClient(base_url=base) as client:
            auth = {"Cookie": f"{sessions.COOKIE}={session}", "X-CSRF-Token": csrf}
            invited = await client.post(
                f"/api/orgs/{org.id}/members",
                headers=auth,
                json={
                    "email": "new@example.org",
                    "first_name": "A",
                    "last_name": "B",
                    "role": "member",
                },
            )
            assert invited.status_code == 201, invited.text
            invitation = invited.json()["invitation_url"].rsplit("/", 1)[1]
            signed = await client.post("/api/session", json={"email": email, "password": PASSWORD})
            assert signed.status_code == 200, signed.text
            creds = {"session": session, "csrf": csrf, "invitation": invitation, "email": email}
            sent = await _sweep(base, routes, org, creds)
            # An id that is not sane is replaced; refusals at the edge carry one too.
            odd = await client.get("/api/v1/external/aircraft", headers={"X-Request-ID": "a b"})
            too_big = await client.post(
                "/api/session", content=b"x" * 40_000, headers={"X-Request-ID": "big"}
            )
        issued = [signed.cookies[sessions.COOKIE], signed.json()["csrf_token"]]
        signatures = await _every_delivery_outcome(services, org, ca, receiver, resolver, closing)

    lines = json_lines(output)
    text = output.getvalue()
    secrets = [org.key, org.key.removeprefix("svc_pk_"), other.key, SECRET]
    secrets += [PASSWORD, quote_plus(PASSWORD)]  # as JSON and as a form send it
    secrets += [session, csrf, invitation, *issued, *signatures, "pw-in-url", "query-in-url"]
    leaked = [s for s in secrets if s in text]
    assert leaked == [], leaked
    assert str(other.id) not in text

    # Every request is logged under the id it was answered with; a sane one is the client's.
    assert all(answered == rid for rid, answered in sent.items())
    access = {line["request_id"]: line for line in lines if line["logger"] == "uvicorn.access"}
    assert set(sent) <= set(access)
    assert HEX_ID.fullmatch(odd.headers["x-request-id"])
    assert odd.headers["x-request-id"] in access
    assert (too_big.status_code, too_big.headers["x-request-id"]) == (413, "big")
    line = access["big"]
    assert line["method"] == "POST"
    assert line["path"] == "/api/session"
    assert line["status"] == 413
    assert line["client"].startswith("127.0.0.1:")
    assert line["duration_ms"] >= 0
    feed = next(v for v in access.values() if ".ics" in v["path"])
    assert "token=[redacted]" in feed["path"]
    # The bug's traceback is logged, under its request's id, without what it quoted.
    boom = [x for x in lines if x.get("exception") and "cannot handle" in x["exception"]]
    assert boom
    assert all(x["request_id"].endswith("-POST") for x in boom)
    assert all(x.keys() >= {"timestamp", "level", "logger", "message"} for x in lines)

    attempts = [x for x in lines if x["logger"] == "hangar.webhooks" and "delivery_id" in x]
    outcomes = sorted((x["outcome"], x["status"] or 0, (x["error"] or "")[:10]) for x in attempts)
    assert outcomes == [
        ("retrying", 0, "TLS error:"),
        ("retrying", 0, "WEBHOOK_UR"),
        ("retrying", 0, "connection"),
        ("retrying", 0, "timeout af"),
        ("retrying", 503, ""),
        ("succeeded", 200, ""),
    ], outcomes
    for x in attempts:
        assert x.keys() >= {"event_id", "event", "subscription_id", "attempt", "duration_ms"}
        assert x["event"] == "squawk.created"
        assert x["attempt"] == 1


async def _every_delivery_outcome(
    services: Services,
    org: Org,
    ca: trustme.CA,
    receiver: Receiver,
    resolver: FakeResolver,
    closing: Callable[[Sender], Sender],
) -> list[str]:
    """One delivery to each kind of endpoint, attempted once; the signatures received."""
    resolver.answers.update({HOST: ["127.0.0.1"], "tls.example.com": ["127.0.0.1"]})
    context = ssl.create_default_context()
    ca.configure_trust(context)
    sender = closing(Sender(resolver, ssl_context=context, is_allowed=loopback_only, timeout=0.5))
    receiver.slow_paths["/slow"] = 5.0
    receiver.statuses = [200]
    closed = free_port()
    port = receiver.port
    urls = [
        f"https://user:pw-in-url@{HOST}:{port}/ok?sig=query-in-url",  # refused (userinfo)
        f"https://{HOST}:{port}/ok",  # succeeds
        f"https://{HOST}:{port}/slow",  # times out
        f"https://tls.example.com:{port}/hook",  # a certificate for another name
        f"https://{HOST}:{closed}/hook",  # nothing listens
    ]
    for url in urls:
        await subscribe(services, org, url)
    failing = Receiver(port=0, statuses=[503])
    async with https_endpoint(ca, failing):
        await subscribe(services, org, failing.url())
        await fire(services, org)
        assert await dispatcher(services, sender).run_once() == len(urls) + 1
    received = receiver.requests + failing.requests
    return [r.headers["X-Service-Signature"].removeprefix("sha256=") for r in received]
