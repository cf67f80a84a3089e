"""deploy/nginx-hangar.conf run for real on loopback (tests/fixtures/deploy.py), for what the
site adds in front of hangar:

- the answers nginx makes itself (its per-address limits, no instance up) are the API's JSON
  `{detail, code}` with `Retry-After`, whatever the client asked for;
- every request gets one request id (the client's when hangar would keep it, else nginx's)
  that nginx passes to hangar, logs, and echoes once: hangar logs and echoes the same;
- every answer, nginx's and hangar's, carries HSTS;
- /metrics is not served to the internet (Prometheus scrapes each instance directly).

(test_scale_out.py runs the same site in front of the whole scale-out topology.)
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import orjson
import pytest
import trustme
from scripts.scratch import free_port

from tests.fixtures.deploy import NGINX, Site, running_site
from tests.fixtures.serve_process import serve_process
from tests.fixtures.subprocesses import Started, eventually

pytestmark = pytest.mark.skipif(
    NGINX is None, reason="nginx is not installed (.ci/run installs it)"
)

HSTS = "max-age=31536000"
NGINX_ID = re.compile(r"[0-9a-f]{32}")  # nginx's $request_id, and hangar's own ids alike
BURST = 40  # the site's `burst=40`: requests past the rate, answered at once, before a 429
PATH = "/api/v1/external/aircraft"  # an answer of the app (a 401), logged as every request is


def client(site: Site) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=site.base, verify=site.client_ssl, timeout=10)


def assert_nginx_json(answer: httpx.Response, code: str, retry_after: str) -> None:
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert (sorted(body), body["code"], bool(body["detail"])) == (["code", "detail"], code, True)
    assert answer.headers["retry-after"] == retry_after
    assert answer.headers["strict-transport-security"] == HSTS
    assert NGINX_ID.fullmatch(answer.headers["x-request-id"])


async def test_with_no_instance_up_nginx_answers_the_apis_json_with_retry_after(
    tmp_path: Path, ca: trustme.CA
) -> None:
    async with running_site(tmp_path, ca, [free_port(), free_port()]) as site, client(site) as c:
        answers = [
            await c.get("/api/health", headers={"Accept": "text/html"}),
            await c.post("/api/session", json={"email": "a@example.org", "password": "x"}),
            await c.get("/settings"),  # both instances now marked failed: "no live upstreams"
        ]
    assert [a.status_code for a in answers] == [502, 502, 502]
    for answer in answers:
        assert_nginx_json(answer, "SERVICE_UNAVAILABLE", "5")


async def test_metrics_are_not_found_through_the_site_however_the_path_is_spelt(
    tmp_path: Path, ca: trustme.CA
) -> None:
    # No instance is up: a 404 (not a 502) is nginx's own answer, never passed to hangar.
    spellings = ["/metrics", "/metrics/", "/metrics?format=text", "//metrics", "/%6detrics"]
    upstreams = [free_port(), free_port()]
    async with running_site(tmp_path, ca, upstreams) as site, client(site) as c:
        answers = [
            # Whole URLs: a path of its own beginning with // would name a host to httpx.
            await c.get(site.base + path, headers={"Authorization": "Bearer the-metrics-token"})
            for path in spellings
        ]
    for path, answer in zip(spellings, answers, strict=True):
        assert answer.status_code == 404, path
        assert answer.json() == {"detail": "Not found", "code": "NOT_FOUND"}
        assert answer.headers["strict-transport-security"] == HSTS


async def test_nginx_refuses_past_its_per_address_rate_with_the_apis_429_and_retry_after(
    tmp_path: Path, ca: trustme.CA
) -> None:
    # One request a minute: the first, then BURST more, pass the limit (to no instance: 502);
    # the next is refused, whatever the test machine's speed.
    upstreams = [free_port(), free_port()]
    async with running_site(tmp_path, ca, upstreams, rate="1r/m") as site, client(site) as c:
        answers = [await c.get("/api/v1/external/aircraft") for _ in range(BURST + 3)]
    assert [a.status_code for a in answers] == [502] * (BURST + 1) + [429] * 2
    for answer in answers[BURST + 1 :]:
        assert_nginx_json(answer, "RATE_LIMITED", "1")
    assert f"request_id={answers[-1].headers['x-request-id']} " in site.log()


async def test_the_request_id_is_set_passed_to_hangar_logged_and_echoed_once(
    tmp_path: Path, ca: trustme.CA, database_url: str, repo_root: Path
) -> None:
    json_logs = {"HANGAR_LOG_FORMAT": "json"}
    async with (
        serve_process(database_url, 1, ca, tmp_path, repo_root, json_logs) as served,
        running_site(tmp_path, ca, [served.port, served.port]) as site,
        client(site) as c,
    ):
        sane = "client-chosen.id:42"
        kept = await c.get(PATH, headers={"X-Request-ID": sane})
        # None, or one hangar would not keep: nginx's own id instead, in both places.
        made = [
            await c.get(PATH),
            await c.get(PATH, headers={"X-Request-ID": "has a space"}),
            await c.get(PATH, headers={"X-Request-ID": "x" * 129}),
        ]
        answers = [kept, *made]
        ids = [a.headers["x-request-id"] for a in answers]
        await eventually(
            lambda: set(ids) <= logged_by_hangar(served.server),
            10,
            "hangar logging each request under nginx's id",
        )

    assert [a.status_code for a in answers] == [401] * 4  # hangar's own answers
    assert ids[0] == sane
    assert all(NGINX_ID.fullmatch(id_) for id_ in ids[1:])
    assert len(set(ids)) == len(ids)
    for answer in answers:
        # One id, nginx's, which hangar echoed too: not two headers.
        assert answer.headers.get_list("x-request-id") == [answer.headers["x-request-id"]]
        assert answer.headers["strict-transport-security"] == HSTS
        assert answer.json()["code"] == "UNAUTHORIZED"
        assert "retry-after" not in answer.headers  # hangar's answer, passed as it is
    logged = site.log()
    assert all(
        f'"GET {PATH} HTTP/1.1" 401 ' in logged and f"request_id={i} " in logged for i in ids
    )


def logged_by_hangar(server: Started) -> set[str]:
    """The request ids of hangar's access lines for PATH (JSON logs)."""
    found = set()
    for line in server.output().split("\n")[:-1]:  # whole lines: the last may be half written
        if line.startswith("{"):
            record = orjson.loads(line)
            if record.get("path") == PATH and "request_id" in record:
                found.add(record["request_id"])
    return found
