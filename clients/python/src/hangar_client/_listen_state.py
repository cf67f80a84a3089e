"""Where `hangar-client listen` stands, kept between runs for `--resume`: one small JSON file
per hangar, key and event filter in the user's state directory, replaced atomically (a
crash leaves the old file or the new one, never half of one)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from hangar_client import _wire

KEY_PREFIX_LENGTH = 12  # what hangar shows of a key on its screens


class StateError(Exception):
    """A state file that cannot be read or written."""


@dataclass(frozen=True)
class Position:
    """The last page's cursor, the filters it is bound to, and the last event forwarded
    from the page after it: a page is forwarded one event at a time, and the API has no
    cursor between two events of a page, so a resumed run skips the page's events up to
    that one."""

    cursor: str | None
    created_after: datetime | None
    last_id: str | None = None


def state_dir(env: Mapping[str, str]) -> Path:
    """$XDG_STATE_HOME/hangar-client, or ~/.local/state/hangar-client (the XDG default)."""
    base = env.get("XDG_STATE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "hangar-client"


@dataclass(frozen=True)
class StateFile:
    path: Path

    @classmethod
    def of(cls, directory: Path, base_url: str, key: str, events: Sequence[str]) -> StateFile:
        """The file of this hangar, key (by the prefix hangar shows, never the whole key)
        and event filter: another filter is another cursor."""
        who = [base_url.rstrip("/"), key[:KEY_PREFIX_LENGTH], sorted(set(events))]
        digest = hashlib.sha256(json.dumps(who).encode()).hexdigest()[:16]
        return cls(directory / f"listen-{digest}.json")

    def load(self) -> Position | None:
        """The saved position, or None when this run has none yet."""
        try:
            saved = _wire.obj(json.loads(self.path.read_text()))
            created_after = _wire.optional(_wire.timestamp)(saved.get("created_after"))
            return Position(
                _wire.optional(_wire.string)(saved.get("cursor")),
                created_after,
                _wire.optional(_wire.string)(saved.get("last_id")),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StateError(f"cannot read {self.path}: {exc}") from None

    def save(self, position: Position) -> None:
        created_after = position.created_after
        body = {
            "cursor": position.cursor,
            "created_after": created_after.isoformat() if created_after else None,
            "last_id": position.last_id,
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".listen-")
            try:
                with os.fdopen(fd, "w") as out:
                    json.dump(body, out)
                    out.flush()
                    os.fsync(out.fileno())  # so that a power cut cannot leave it empty
                os.replace(temporary, self.path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError as exc:
            raise StateError(f"cannot write {self.path}: {exc}") from None
