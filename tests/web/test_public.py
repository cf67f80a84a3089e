"""The public pages (/docs, /changelog, /changelog.rss) and the headers every page carries."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
import pytest

from hangar.external.openapi import API_VERSION
from hangar.web import changelog
from hangar.webhooks.events.catalogue import EVENT_NAMES
from tests.fixtures.factories import Org

PUBLIC = ["/login", "/docs", "/changelog"]
CODE = re.compile(r"`([A-Z][A-Z_]+)`")  # an error code, as the OpenAPI's descriptions quote it


@pytest.mark.parametrize("path", [*PUBLIC, "/settings", "/settings/not-an-id/keys"])
async def test_every_page_carries_the_security_headers(
    client: httpx.AsyncClient, path: str
) -> None:
    response = await client.get(path)
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_signed_in_pages_and_refusals_carry_them_too(
    admin: httpx.AsyncClient, member: httpx.AsyncClient, org: Org
) -> None:
    for response in (
        await admin.get(f"/settings/{org.id}/keys"),
        await admin.get(f"/settings/{org.id}/webhooks/new"),
        await member.get(f"/settings/{org.id}/keys"),
        await admin.get(f"/settings/{org.id}/webhooks/{org.id}/deliveries"),  # 404 page
    ):
        assert response.headers["x-frame-options"] == "DENY"
        assert "default-src 'none'" in response.headers["content-security-policy"]
        assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("path", [*PUBLIC])
async def test_no_inline_script_or_style(client: httpx.AsyncClient, path: str) -> None:
    html = (await client.get(path)).text
    assert "<script>" not in html
    assert "<style" not in html
    assert " style=" not in html
    assert " onclick=" not in html


async def test_static_files_are_served_and_nothing_else(client: httpx.AsyncClient) -> None:
    assert (
        (await client.get("/static/app.js")).headers["content-type"].startswith("text/javascript")
    )
    assert (await client.get("/static/style.css")).status_code == 200
    assert (await client.get("/static/../pages.py")).status_code == 404
    assert (await client.get("/static/pages.py")).status_code == 404


async def test_docs_list_every_operation_of_the_live_openapi(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/api/v1/external/openapi.json")).json()
    html = (await client.get("/docs")).text
    count = 0
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            count += 1
            assert f'data-operation="{method.upper()} {path}"' in html
            assert f'id="{op["operationId"]}"' in html
            for param in op.get("parameters", []):
                assert f"<code>{param['name']}</code>" in html
            if "x-required-scope" in op:
                assert f"scope <code>{op['x-required-scope']}</code>" in html
            else:
                assert "· any valid key</p>" in html
    assert count == 9
    assert f"version {API_VERSION}" in html


async def test_the_docs_error_table_has_every_status_and_code_the_api_documents(
    client: httpx.AsyncClient,
) -> None:
    spec = (await client.get("/api/v1/external/openapi.json")).json()
    html = (await client.get("/docs")).text
    table = html[html.index('id="errors"') :].split("</table>")[0]
    # Every code an answer's description names (422 names two on /events).
    documented = {
        (status, code)
        for methods in spec["paths"].values()
        for op in methods.values()
        for status, answer in op["responses"].items()
        if status >= "400"
        for code in CODE.findall(answer["description"])
    }
    assert ("503", "SERVICE_UNAVAILABLE") in documented
    assert {("410", "CURSOR_EXPIRED"), ("422", "UNKNOWN_EVENT")} <= documented
    for status, code in documented:
        assert f"<tr><td>{status}</td><td><code>{code}</code></td>" in table, (status, code)


async def test_docs_render_each_operations_descriptions(client: httpx.AsyncClient) -> None:
    # The document's descriptions are CommonMark: the page shows them formatted, not as source.
    spec = (await client.get("/api/v1/external/openapi.json")).json()
    html = (await client.get("/docs")).text
    for methods in spec["paths"].values():
        op = methods["get"]
        section = html[html.index(f'id="{op["operationId"]}"') :]
        section = section[: section.index("</section>")]
        assert "<p>Scope: <code>" in section or "<p>Any valid key, whatever its scopes" in section
        assert "`" not in section
        ok = op["responses"]["200"]["description"]
        assert f"<strong>200</strong> {ok}" in section


async def test_docs_cover_scopes_limits_and_every_event(client: httpx.AsyncClient) -> None:
    html = (await client.get("/docs")).text
    for scope in ("read:reservations", "read:members.full", "read:maintenance"):
        assert f"<code>{scope}</code>" in html
    assert "60 requests per calendar minute" in html
    assert "Retry-After" in html  # says it is not sent
    for name in EVENT_NAMES:
        assert f'id="event-{name}"' in html
    assert html.count('class="event"') == 13
    assert "hmac.compare_digest" in html
    assert "crypto.timingSafeEqual" in html


async def test_docs_cover_the_events_api_and_every_delivery_header(
    client: httpx.AsyncClient,
) -> None:
    html = (await client.get("/docs")).text
    scopes = html[html.index('id="scopes"') :].split("</table>")[0]
    assert "<code>read:events</code>" in scopes
    assert "<code>/api/v1/external/events</code>" in scopes
    headers = html[html.index('id="webhooks"') :].split("</table>")[0]
    for header in (
        "Content-Type",
        "User-Agent",
        "X-Service-Event",
        "X-Service-Event-Id",
        "X-Service-Delivery",
        "X-Service-Signature",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    ):
        assert f'<td data-label="Header"><code>{header}</code></td>' in headers, header
    note = html[html.index('id="standard-webhooks"') : html.index('id="catching-up"')]
    for said in ("5 minutes", "whsec_", "secret_whsec", "X-Service-Signature</code> is unchanged"):
        assert said in note, said
    for anchor, title in (
        ("catching-up", "Catching up after downtime"),
        ("local-receiver", "Developing a receiver locally"),
    ):
        assert f'<h2 id="{anchor}">{title}</h2>' in html
        assert f'<li><a href="#{anchor}">{title}</a></li>' in html  # in the table of contents
    guide = html[html.index('id="catching-up"') : html.index('id="local-receiver"')]
    for said in ("X-Service-Event-Id", "every 5 seconds", "CURSOR_EXPIRED", "created_after"):
        assert said in guide, said
    local = html[html.index('id="local-receiver"') : html.index('id="python-client"')]
    for said in (
        "hangar-client listen --forward-to http://localhost:3000/webhooks",
        "--resume",
        "--event NAME",
        "Signing secret:",
    ):
        assert said in local, said


async def test_the_changelog_page_shows_api_1_4_0(client: httpx.AsyncClient) -> None:
    html = (await client.get("/changelog")).text
    assert 'id="v1.5.0"' in html
    assert "API 1.5.0" in html
    # The versions before it stay on the page.
    assert 'id="v1.3.0"' in html
    assert 'id="v1.2.0"' in html
    assert 'id="v1.1.0"' in html
    assert 'type="application/rss+xml"' in html


async def test_the_changelog_feed_is_valid_rss_2(client: httpx.AsyncClient) -> None:
    response = await client.get("/changelog.rss")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/rss+xml")
    root = ET.fromstring(response.content)  # noqa: S314 - our own feed
    assert root.tag == "rss"
    assert root.get("version") == "2.0"
    [channel] = root.findall("channel")
    for required in ("title", "link", "description"):
        assert (channel.findtext(required) or "").strip(), required
    assert channel.findtext("link") == "https://hangar.example/changelog"
    items = channel.findall("item")
    assert items
    first = items[0]
    assert first.findtext("title") == "API 1.5.0"
    newest = changelog.load().entries[0]
    assert first.findtext("link") == f"https://hangar.example/changelog#{newest.anchor}"
    assert first.find("guid") is not None
    parsedate_to_datetime(first.findtext("pubDate") or "")  # RFC 822 date, or it raises
    description = first.findtext("description") or ""
    assert 'href="https://hangar.example/docs' in description
    assert 'href="/' not in description
    for item in items:
        assert item.findtext("title") or item.findtext("description")
    # A version can have several entries (changes that kept the API's version): each item
    # still has its own id and link.
    guids = [item.findtext("guid") for item in items]
    links = [item.findtext("link") for item in items]
    assert len(set(guids)) == len(guids) == len(set(links))


def test_the_changelog_is_found_from_the_package(repo_root: Path) -> None:
    # The package's CHANGELOG.md is the repository's own file, through a link: one source.
    packaged = Path(str(changelog.CHANGELOG))
    assert packaged.is_symlink()
    assert packaged.resolve() == (repo_root / "CHANGELOG.md").resolve()
    assert changelog.load().entries[0].version == API_VERSION


def test_the_changelog_never_passes_raw_html_through() -> None:
    log = changelog.parse("# Log\n\n## 2.0.0 — 2027-01-02\n\n<script>alert(1)</script>\n")
    assert "<script>" not in log.entries[0].html
    with pytest.raises(ValueError, match="VERSION"):
        changelog.parse("## soon\n\ntext\n")


def test_an_unreleased_section_is_shown_but_neither_a_version_nor_in_the_feed() -> None:
    log = changelog.parse(
        "# Log\n\n## Unreleased\n\n- **Recover** is coming.\n\n## 2.0.0 — 2027-01-02\n\nText.\n"
    )
    assert [e.version for e in log.entries] == ["2.0.0"]
    assert log.unreleased_html is not None
    assert "<strong>Recover</strong> is coming." in log.unreleased_html
    feed = changelog.rss(log, "https://hangar.example")
    assert b"Recover" not in feed
    # Only as the first section: anywhere else, a heading is a version or an error.
    with pytest.raises(ValueError, match="VERSION"):
        changelog.parse("## 2.0.0 — 2027-01-02\n\nText.\n\n## Unreleased\n\nLater.\n")


async def test_the_changelog_page_shows_what_is_unreleased_first(client: httpx.AsyncClient) -> None:
    page = (await client.get("/changelog")).text
    if changelog.load().unreleased_html is None:
        pytest.skip("CHANGELOG.md has no Unreleased section now")
    assert page.index('id="unreleased"') < page.index(f'id="v{API_VERSION}"')
