"""PostgreSQL's side of a backup: `pg_dump -Fc` and `pg_restore`, PostgreSQL's own client tools
found on the PATH (the password handed to them in their environment, never on a command line),
and the few queries a backup and a restore ask the database itself."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from hangar.db.backup import BackupError, Progress, without_password
from hangar.db.engine import make_engine


def dump(database_url: str, target: Path, progress: Progress) -> tuple[str, ...]:
    """The database dumped to `target`; the Alembic revisions the dump is at."""
    tool = _tool("pg_dump")
    shown = without_password(database_url)
    before = revisions(database_url)
    if not before:
        raise BackupError(
            f"{shown} holds no hangar database (never migrated): check HANGAR_DATABASE_URL"
        )
    progress(f"dumping {shown} with {tool} -Fc")
    _run(
        [
            tool,
            "--format=custom",
            "--no-password",
            f"--file={target}",
            "--dbname",
            _libpq_url(database_url),
        ],
        database_url,
    )
    # pg_dump's snapshot and the revisions read around it agree unless a migration ran
    # meanwhile; then the manifest could name the wrong schema, so the backup is refused.
    if revisions(database_url) != before:
        raise BackupError("the database was migrated during the backup: run the backup again")
    return before


def restore(copied: Path, database_url: str, existing: list[str], progress: Progress) -> None:
    """The dump `copied` out of the backup restored into the database, in one transaction;
    `existing`, the tables it holds, are replaced (all of them, or nothing is restored)."""
    tool = _tool("pg_restore")
    shown = without_password(database_url)
    listed = _run([tool, "--list", str(copied)], database_url)
    # `pg_restore --list` names each table as `ID; OID OID TABLE SCHEMA NAME OWNER`.
    restored = {
        fields[5]
        for line in listed.splitlines()
        if len(fields := line.split()) > 5 and fields[3] == "TABLE" and fields[4] != "DATA"
    }
    # --clean drops only what the backup holds; a table it does not hold (one a later
    # release added) would stay behind and break the next migration.
    extra = sorted(set(existing) - restored)
    if extra:
        raise BackupError(
            f"{shown} holds tables this backup does not ({', '.join(extra[:3])}): restore into "
            "a new, empty database (createdb) instead"
        )
    progress(f"restoring into {shown} with {tool}")
    clean = ["--clean", "--if-exists"] if existing else []
    _run(
        [
            tool, *clean, "--no-owner", "--no-privileges", "--single-transaction", "--no-password",
            "--exit-on-error", "--dbname", _libpq_url(database_url), str(copied),
        ],
        database_url,
    )  # fmt: skip


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} is not on the PATH: install the PostgreSQL client tools of the server's "
            f"major version (Debian and Ubuntu: apt install postgresql-client)"
        )
    return found


def _libpq_url(database_url: str) -> str:
    """The URL for --dbname, without its password: a command line is visible to every user
    of the machine (ps), so the password goes to the child's PGPASSWORD instead."""
    return without_password(database_url).replace("postgresql+asyncpg://", "postgresql://", 1)


def _password(database_url: str) -> str | None:
    parts = urlsplit(database_url)
    if parts.password is not None:
        return unquote(parts.password)
    return dict(parse_qsl(parts.query)).get("password")


def _run(command: list[str], database_url: str) -> str:
    """Runs a PostgreSQL tool (with --no-password, so that a job without a TTY fails at once
    instead of waiting at a prompt); its stdout, or its last line of stderr as the error."""
    env = dict(os.environ)
    password = _password(database_url)
    if password is not None:
        env["PGPASSWORD"] = password
    try:
        done = subprocess.run(  # noqa: S603 - PostgreSQL's own tools, found on the PATH
            command, env=env, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise BackupError(f"cannot run {command[0]}: {exc.strerror}") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exited {done.returncode}"
        if password:
            reason = reason.replace(password, "[redacted]")
        raise BackupError(f"{Path(command[0]).name} failed: {reason.strip()}")
    return done.stdout


def revisions(database_url: str) -> tuple[str, ...]:
    rows = query(
        database_url,
        "SELECT version_num FROM alembic_version",
        guard="SELECT to_regclass('alembic_version') IS NOT NULL",
    )
    return tuple(sorted(rows))


def query(database_url: str, sql: str, guard: str | None = None) -> list[str]:
    """The first column of `sql`'s rows; with `guard`, nothing unless `guard` is true first
    (a query naming a table that does not exist fails even where its WHERE is false)."""

    async def run() -> list[str]:
        engine = make_engine(database_url, pool_size=1)
        try:
            async with engine.connect() as conn:
                if guard is not None and not await conn.scalar(text(guard)):
                    return []
                return [str(row[0]) for row in await conn.execute(text(sql))]
        finally:
            await engine.dispose()

    try:
        return asyncio.run(run())
    except Exception as exc:  # the driver's many errors: each is the one line to show
        cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        reason = str(cause).splitlines()[0] if str(cause) else cause.__class__.__name__
        password = _password(database_url)
        if password:
            reason = reason.replace(password, "[redacted]")
        raise BackupError(f"cannot reach {without_password(database_url)}: {reason}") from None
