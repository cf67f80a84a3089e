"""/changelog and /changelog.rss, both made from CHANGELOG.md at the repository root.

The package ships it: src/hangar/CHANGELOG.md is a link to the repository's file, which a
built wheel holds as package data, so a checkout and an installed wheel read the same text
through the package. Each `## VERSION — DATE` heading starts an entry; the Markdown under it
is the entry's text. A first section headed `## Unreleased` holds what is merged and not yet
released: the page shows it above the entries, and the feed, which announces releases, does
not carry it (nor does it count as the newest version).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from email.utils import format_datetime
from functools import lru_cache
from importlib.resources import files
from importlib.resources.abc import Traversable

from fastapi import APIRouter, Request
from markdown_it import MarkdownIt
from starlette.responses import Response

from hangar.http.routing import ServicesDep
from hangar.web.pages import PageRoute, render

router = APIRouter(route_class=PageRoute)

CHANGELOG = files("hangar") / "CHANGELOG.md"
_HEADING = re.compile(r"(?P<version>\S+)\s+[\u2014\u2013-]+\s+(?P<date>\d{4}-\d{2}-\d{2})")
UNRELEASED = "Unreleased"
# Raw HTML in the file is shown as text, never passed through.
_md = MarkdownIt("commonmark", {"html": False})


@dataclass(frozen=True)
class Entry:
    version: str
    released: date
    html: str

    # One entry per version (tests/web/test_changelog_versions.py), so the version alone
    # makes anchors and feed ids unique.
    @property
    def anchor(self) -> str:
        return "v" + self.version

    @property
    def guid(self) -> str:
        return f"hangar-api-{self.version}"


@dataclass(frozen=True)
class Changelog:
    title: str
    intro_html: str
    entries: tuple[Entry, ...]
    unreleased_html: str | None = None  # the `## Unreleased` section, if the file has one


def parse(markdown: str) -> Changelog:
    tokens = _md.parse(markdown)
    title = "Changelog"
    starts = [i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]
    intro = tokens[: starts[0]] if starts else tokens
    for i, token in enumerate(intro):
        if token.type == "heading_open" and token.tag == "h1":
            title = intro[i + 1].content
            intro = intro[:i] + intro[i + 3 :]
            break
    entries = []
    unreleased = None
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(tokens)
        heading = tokens[start + 1].content
        if n == 0 and heading.strip() == UNRELEASED:
            unreleased = _md.renderer.render(tokens[start + 3 : end], _md.options, {})
            continue
        match = _HEADING.fullmatch(heading.strip())
        if match is None:
            raise ValueError(f"CHANGELOG.md heading {heading!r} is not 'VERSION — YYYY-MM-DD'")
        body = _md.renderer.render(tokens[start + 3 : end], _md.options, {})
        entries.append(Entry(match["version"], date.fromisoformat(match["date"]), body))
    intro_html = _md.renderer.render(intro, _md.options, {})
    return Changelog(title, intro_html, tuple(entries), unreleased)


_parsed = lru_cache(maxsize=4)(parse)


def load(source: Traversable = CHANGELOG) -> Changelog:
    # Read on each request (a few KiB), parsed once per text: an edited file shows at once.
    return _parsed(source.read_text(encoding="utf-8"))


def rss(log: Changelog, public_url: str) -> bytes:
    """An RSS 2.0 document: one item per entry, newest first as in the file."""
    page = f"{public_url.rstrip('/')}/changelog"
    root = ET.Element("rss", version="2.0")
    channel = ET.SubElement(root, "channel")
    ET.SubElement(channel, "title").text = f"hangar API: {log.title}"
    ET.SubElement(channel, "link").text = page
    ET.SubElement(
        channel, "description"
    ).text = "Changes to the hangar read-only API, calendar feed and webhooks."
    ET.SubElement(channel, "language").text = "en"
    if log.entries:
        newest = max(e.released for e in log.entries)
        ET.SubElement(channel, "lastBuildDate").text = format_datetime(
            datetime.combine(newest, time(), UTC)
        )
    for entry in log.entries:
        item = ET.SubElement(channel, "item")
        ET.SubElement(item, "title").text = f"API {entry.version}"
        ET.SubElement(item, "link").text = f"{page}#{entry.anchor}"
        ET.SubElement(item, "guid", isPermaLink="false").text = entry.guid
        ET.SubElement(item, "pubDate").text = format_datetime(
            datetime.combine(entry.released, time(), UTC)
        )
        # HTML inside <description> is sent as escaped text, as RSS readers expect; links
        # are made absolute, since a reader has no page to resolve them against.
        ET.SubElement(item, "description").text = entry.html.replace(
            'href="/', f'href="{public_url.rstrip("/")}/'
        )
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))


@router.get("/changelog")
async def changelog_page(request: Request) -> Response:
    return render(request, "changelog.html", log=load())


@router.get("/changelog.rss")
async def changelog_feed(services: ServicesDep) -> Response:
    body = rss(load(), services.settings.public_url)
    return Response(body, media_type="application/rss+xml; charset=utf-8")
