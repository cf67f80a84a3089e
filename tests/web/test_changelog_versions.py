"""CHANGELOG.md (served at /changelog and /changelog.rss) has one entry per version, newest
first: a change that shipped under a version already listed belongs in that version's entry,
and a heading that spells a version another way (`v1.1.0`, `1.1`) is not a new version."""

from __future__ import annotations

import re
from datetime import date

from hangar.web import changelog

SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


def problems(log: changelog.Changelog) -> list[str]:
    """What is wrong with the entries' versions and dates, in words; none when all is well."""
    found = []
    seen: dict[tuple[int, ...], str] = {}
    previous: tuple[tuple[int, ...], date] | None = None
    for entry in log.entries:
        match = SEMVER.fullmatch(entry.version)
        if match is None:
            found.append(f"{entry.version!r} is not MAJOR.MINOR.PATCH")
            continue
        version = tuple(int(part) for part in match.groups())
        if version in seen:
            found.append(f"{entry.version} has a second entry (after {seen[version]})")
        seen.setdefault(version, f"{entry.version} of {entry.released}")
        if previous is not None:
            newer, newer_date = previous
            if version > newer:
                found.append(f"{entry.version} comes after a lower version: newest first")
            if entry.released > newer_date:
                found.append(f"{entry.version} of {entry.released} is after the entry above it")
        previous = (version, entry.released)
    return found


def test_each_version_has_one_entry_newest_first() -> None:
    log = changelog.load()
    assert problems(log) == []
    # The versions so far, none lost in the merge of 1.1.0's two entries.
    assert {"1.4.0", "1.3.0", "1.2.0", "1.1.0"} <= {e.version for e in log.entries}


def test_a_repeated_or_misordered_version_is_caught() -> None:
    def check(*headings: str) -> list[str]:
        text = "# Log\n\n" + "".join(f"## {h}\n\nText.\n\n" for h in headings)
        return problems(changelog.parse(text))

    assert check("1.2.0 — 2026-11-24", "1.1.0 — 2026-11-22") == []
    assert check("1.1.0 — 2026-11-24", "1.1.0 — 2026-11-22") == [
        "1.1.0 has a second entry (after 1.1.0 of 2026-11-24)"
    ]
    # Spelled another way, the same version still.
    assert check("1.2.0 — 2026-11-24", "1.1.0 — 2026-11-24", "v1.1.0 — 2026-11-22") == [
        "'v1.1.0' is not MAJOR.MINOR.PATCH"
    ]
    assert check("1.1.0 — 2026-11-24", "1.01.0 — 2026-11-22") == [
        "'1.01.0' is not MAJOR.MINOR.PATCH"
    ]
    # Out of order: by version (numbers, not text: 1.10.0 is above 1.9.0), and by date.
    assert check("1.10.0 — 2026-11-24", "1.9.0 — 2026-11-22") == []
    assert check("1.9.0 — 2026-11-24", "1.10.0 — 2026-11-22") == [
        "1.10.0 comes after a lower version: newest first"
    ]
    assert check("1.2.0 — 2026-11-22", "1.1.0 — 2026-11-24") == [
        "1.1.0 of 2026-11-24 is after the entry above it"
    ]
