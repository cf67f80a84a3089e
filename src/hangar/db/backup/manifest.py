"""What a backup says it is: the manifest, first in the archive, signed with a key derived
from the HANGAR_SECRET_KEY that made the backup, and read back as strictly as it was written."""

from __future__ import annotations

import hmac
import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from hangar import __version__
from hangar.db.backup import BackupError, Kind
from hangar.db.key_check import Keys
from hangar.foundation.crypto import derive_key

FORMAT = "hangar-backup"
FORMAT_VERSION = 2  # 2: the manifest is signed (Manifest.signature); 1 was not
MEMBERS = {"sqlite": "database.sqlite3", "postgresql": "database.pgdump"}


@dataclass(frozen=True)
class Manifest:
    hangar_version: str
    database: Kind
    revisions: tuple[str, ...]  # the Alembic revisions the copy is at
    created_at: str  # ISO 8601, UTC
    key_fingerprint: str  # key_check.fingerprint() of the key that sealed the copy's secrets
    # HANGAR_SECRET_KEY_PREVIOUS's, when set: secrets not yet resealed need one of these.
    previous_key_fingerprints: tuple[str, ...]
    file: str  # the tar member holding the database
    size: int
    sha256: str
    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    # HMAC-SHA256 of every other field, under a key derived from the HANGAR_SECRET_KEY that
    # made the backup: a restore trusts only a manifest (so a database: its size and sha256)
    # that one of its own keys signed. Empty in format 1.
    signature: str = ""

    def to_json(self) -> bytes:
        return json.dumps(self._fields(), indent=2, sort_keys=True).encode() + b"\n"

    def _fields(self) -> dict[str, Any]:
        return asdict(self) | {
            "revisions": list(self.revisions),
            "previous_key_fingerprints": list(self.previous_key_fingerprints),
        }

    def _mac(self, secret_key: str) -> str:
        fields = self._fields()
        del fields["signature"]
        body = json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(derive_key(secret_key, "backup-manifest"), body, "sha256").hexdigest()

    def signed(self, secret_key: str) -> Manifest:
        return replace(self, signature=self._mac(secret_key))

    def signed_by(self, keys: Keys) -> bool:
        """Whether one of `keys` signed this manifest (each compared in constant time)."""
        matches = [hmac.compare_digest(self._mac(key), self.signature) for key in keys.held]
        return bool(self.signature) and any(matches)


def damaged(path: Path) -> BackupError:
    return BackupError(
        f"{path} is damaged or not a hangar backup (its manifest.json is unreadable)"
    )


def parse(path: Path, body: bytes) -> Manifest:
    """The manifest `body` (the archive's manifest.json) says, every field checked: the backup
    at `path` is refused as damaged, or as of a newer format, unless it is one of ours."""
    try:
        raw: Any = json.loads(body)
    except ValueError:
        raise damaged(path) from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise damaged(path)
    if not isinstance(raw.get("format_version"), int):
        raise damaged(path)
    if raw["format_version"] > FORMAT_VERSION:
        raise BackupError(
            f"{path} is in a newer backup format ({raw['format_version']}) than this hangar "
            f"{__version__} reads: restore it with the release that made it, or a later one"
        )
    try:
        manifest = _fields_of(raw)
        release(manifest.hangar_version)
    except (KeyError, TypeError, ValueError, BackupError):
        raise damaged(path) from None
    if not manifest.revisions:
        raise damaged(path)
    return manifest


def _fields_of(raw: dict[str, Any]) -> Manifest:
    return Manifest(
        hangar_version=_text(raw["hangar_version"]),
        database=raw["database"] if raw["database"] in MEMBERS else _bad(),
        revisions=tuple(_text(rev) for rev in raw["revisions"]),
        created_at=_text(raw["created_at"]),
        key_fingerprint=_text(raw["key_fingerprint"]),
        previous_key_fingerprints=tuple(
            _text(found) for found in raw.get("previous_key_fingerprints", [])
        ),
        file=raw["file"] if raw["file"] == MEMBERS[raw["database"]] else _bad(),
        size=raw["size"] if isinstance(raw["size"], int) and raw["size"] >= 0 else _bad(),
        sha256=_text(raw["sha256"]),
        format_version=raw["format_version"],
        signature=_text(raw["signature"]) if "signature" in raw else "",  # format 1: none
    )


def _text(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError
    return value


def _bad() -> Any:
    raise ValueError


def release(text: str) -> tuple[int, ...]:
    """1.2.0 → (1, 2, 0): releases are numbered so (a development suffix compares equal)."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
    if found is None:
        raise BackupError(f"unreadable hangar version {text!r}")
    return tuple(int(part) for part in found.groups())
