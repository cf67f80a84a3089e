"""The one line `hangar serve` and `hangar worker` log as they start: which release runs, on
which database, with or without Redis, in how many server processes, whether it delivers
webhooks, at which log level. In text a line of key=value pairs; in JSON the same pairs as
fields of the record too.

Logged once per command started (the process the operator runs), before any server or worker
process it starts: uvicorn logs each server process's pid, and `hangar serve --workers N` its
worker process's.

Never a secret: the database is named by its kind and host, port and database name (SQLite:
its file), never by its URL, which may hold a user, a password or a password parameter; Redis
only by whether it is configured.
"""

from __future__ import annotations

import logging
from typing import Literal
from urllib.parse import urlsplit

from hangar import __version__
from hangar.foundation.config import Settings
from hangar.foundation.sqlite_files import sqlite_path

log = logging.getLogger("hangar")

Role = Literal["serve", "worker"]
Fields = dict[str, str | int]


def database_fields(database_url: str) -> Fields:
    """{database: sqlite, path} or {database: postgresql, host: host[:port]/name}."""
    if database_url.startswith("sqlite"):
        path = sqlite_path(database_url)
        return {"database": "sqlite", "path": str(path.resolve()) if path else ":memory:"}
    parts = urlsplit(database_url)
    # Only these parts, each read on its own: the user information and the query (libpq takes
    # `?password=` too) never come near the line.
    host = parts.hostname or "local-socket"
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    where = f"{host}:{port}" if port else host
    name = parts.path.lstrip("/")
    return {"database": "postgresql", "host": f"{where}/{name}" if name else where}


def start_fields(
    settings: Settings,
    role: Role,
    *,
    processes: int | None,
    delivers_webhooks: bool,
    metrics: str,
) -> Fields:
    """The start line's pairs, in the order the line gives them. `processes`: the server
    processes of `hangar serve` (None for the worker, which has none); `metrics`: on or off
    (the server's /metrics), or where the worker serves its own."""
    fields: Fields = {
        "version": __version__,
        "role": role,
        **database_fields(settings.database_url),
        "redis": "configured" if settings.redis_url else "none",
    }
    if processes is not None:
        fields["processes"] = processes
    fields.update(
        delivers_webhooks="yes" if delivers_webhooks else "no",
        metrics=metrics,
        log_level=settings.log_level,
    )
    return fields


def log_start(
    settings: Settings,
    role: Role,
    *,
    processes: int | None,
    delivers_webhooks: bool,
    metrics: str,
) -> None:
    """Logs the start line (at info: HANGAR_LOG_LEVEL=warning or error leaves it out)."""
    fields = start_fields(
        settings, role, processes=processes, delivers_webhooks=delivers_webhooks, metrics=metrics
    )
    pairs = " ".join(f"{key}={value}" for key, value in fields.items() if key != "version")
    log.info("hangar %s starting: %s", __version__, pairs, extra=fields)
