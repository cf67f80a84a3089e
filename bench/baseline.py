"""The bare baseline: a raw ASGI callable, no framework, doing the API's work by hand.

Same drivers (asyncpg, or aiosqlite), the same key lookup (SHA-256 of the bearer, one indexed
SELECT, `last_used_at` touched at most once a minute), the same rate-limit counters (the
limiter object hangar would use), the same SQL, and orjson writing a body byte-identical to
hangar's. It answers only what the benchmarks ask: the first and later pages of
/reservations (plus an OFFSET variant for contrast), /aircraft and /members.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import re
import uuid
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl

import orjson

from hangar.http.limits import send_json
from hangar.kit import cursor
from hangar.kit.encoding import dumps
from hangar.kit.ratelimit import API_LIMITS, Limit, RateLimiter

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

PREFIX = "/api/v1/external"
_KEY_RE = re.compile(r"svc_pk_[A-Za-z0-9_-]{43}")

# Column conversions SQLite needs (it stores UUIDs as hex text, datetimes as naive text).
U, T, B = "u", "t", "b"

RES_COLUMNS = (
    ("id", U),
    ("aircraft_id", U),
    ("pilot_id", U),
    ("instructor_id", U),
    ("activity_type", ""),
    ("start_time", T),
    ("end_time", T),
    ("status", ""),
    ("checked_in_at", T),
    ("completed_at", T),
)
_RES_SELECT = "SELECT " + ", ".join(n for n, _ in RES_COLUMNS) + " FROM reservations"  # noqa: S608
SQL_DATED_FIRST = (
    _RES_SELECT + " WHERE org_id = $1 AND deleted_at IS NULL AND start_time IS NOT NULL"
    " ORDER BY start_time DESC, id DESC LIMIT $2"
)
SQL_DATED_AFTER = (
    _RES_SELECT + " WHERE org_id = $1 AND deleted_at IS NULL AND start_time IS NOT NULL"
    " AND (start_time, id) < ($2, $3) ORDER BY start_time DESC, id DESC LIMIT $4"
)
SQL_DATED_OFFSET = (
    _RES_SELECT + " WHERE org_id = $1 AND deleted_at IS NULL AND start_time IS NOT NULL"
    " ORDER BY start_time DESC, id DESC LIMIT $2 OFFSET $3"
)
SQL_UNDATED = (
    _RES_SELECT + " WHERE org_id = $1 AND deleted_at IS NULL AND start_time IS NULL"
    " ORDER BY id DESC LIMIT $2"
)
SQL_UNDATED_AFTER = (
    _RES_SELECT + " WHERE org_id = $1 AND deleted_at IS NULL AND start_time IS NULL"
    " AND id < $2 ORDER BY id DESC LIMIT $3"
)
AIRCRAFT_COLUMNS = (
    ("id", U),
    ("tail_number", ""),
    ("aircraft_type", ""),
    ("display_name", ""),
    ("is_active", B),
    ("hobbs_current", ""),
    ("tach_current", ""),
    ("annual_due_date", ""),
    ("last_100hr_hobbs", ""),
)
SQL_AIRCRAFT = (
    "SELECT id, tail_number, aircraft_type, display_name, is_active, hobbs_current,"
    " tach_current, annual_due_date, last_100hr_hobbs"
    " FROM aircraft WHERE org_id = $1 AND deleted_at IS NULL ORDER BY tail_number, id"
)
MEMBER_COLUMNS = (
    ("user_id", U),
    ("role_id", U),
    ("role_name", ""),
    ("status", ""),
    ("is_discovery", B),
    ("joined_at", T),
)
CONTACT_COLUMNS = (("email", ""), ("first_name", ""), ("last_name", ""), ("phone", ""))
SQL_MEMBERS = (
    "SELECT m.user_id, m.role_id, r.name AS role_name, m.status, m.is_discovery, m.joined_at"
    " FROM memberships m LEFT OUTER JOIN roles r ON r.id = m.role_id"
    " WHERE m.org_id = $1 AND m.deleted_at IS NULL"
    " ORDER BY m.joined_at ASC NULLS LAST, m.id"
)
SQL_MEMBERS_FULL = (
    "SELECT m.user_id, m.role_id, r.name AS role_name, m.status, m.is_discovery, m.joined_at,"
    " m.email, m.first_name, m.last_name, m.phone"
    " FROM memberships m LEFT OUTER JOIN roles r ON r.id = m.role_id"
    " WHERE m.org_id = $1 AND m.deleted_at IS NULL"
    " ORDER BY m.joined_at ASC NULLS LAST, m.id"
)
SQL_KEY = (
    "SELECT id, org_id, key_hash, scopes, expires_at, revoked_at, last_used_at"
    " FROM api_keys WHERE key_hash = $1"
)
SQL_TOUCH = "UPDATE api_keys SET last_used_at = $1 WHERE id = $2"


class Database:
    """The little a baseline needs from a driver: fetch rows as tuples, run one UPDATE."""

    sqlite = False

    async def open(self) -> None:
        raise NotImplementedError

    async def fetch(self, sql: str, *args: Any) -> Sequence[Sequence[Any]]:
        raise NotImplementedError

    async def execute(self, sql: str, *args: Any) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class PgDatabase(Database):
    def __init__(self, url: str, size: int = 10) -> None:
        self._url = url.replace("postgresql://", "postgres://", 1)
        self._size = size
        self._pool: Any = None

    async def open(self) -> None:
        import asyncpg

        self._pool = await asyncpg.create_pool(self._url, min_size=1, max_size=self._size)

    async def fetch(self, sql: str, *args: Any) -> Sequence[Sequence[Any]]:
        async with self._pool.acquire() as conn:
            rows: Sequence[Sequence[Any]] = await conn.fetch(sql, *args)
            return rows

    async def execute(self, sql: str, *args: Any) -> None:
        async with self._pool.acquire() as conn:
            await conn.execute(sql, *args)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()


_DOLLAR = re.compile(r"\$\d+")


class SqliteDatabase(Database):
    """A few aiosqlite connections, each with the PRAGMAs hangar's engine sets."""

    sqlite = True

    def __init__(self, path: str, size: int = 4) -> None:
        self._path = path
        self._size = size
        self._free: list[Any] = []
        self._waiters: list[Any] = []
        self._sql: dict[str, str] = {}

    async def open(self) -> None:
        import aiosqlite

        for _ in range(self._size):
            conn = await aiosqlite.connect(self._path)
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=10000"):
                await conn.execute(f"PRAGMA {pragma}")
            self._free.append(conn)

    def _q(self, sql: str) -> str:
        found = self._sql.get(sql)
        if found is None:
            found = self._sql[sql] = _DOLLAR.sub("?", sql)
        return found

    async def _acquire(self) -> Any:
        import asyncio

        while not self._free:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        return self._free.pop()

    def _release(self, conn: Any) -> None:
        self._free.append(conn)
        if self._waiters:
            waiter = self._waiters.pop(0)
            if not waiter.done():
                waiter.set_result(None)

    async def fetch(self, sql: str, *args: Any) -> Sequence[Sequence[Any]]:
        conn = await self._acquire()
        try:
            async with conn.execute(self._q(sql), args) as cur:
                rows: Sequence[Sequence[Any]] = await cur.fetchall()
                return rows
        finally:
            self._release(conn)

    async def execute(self, sql: str, *args: Any) -> None:
        conn = await self._acquire()
        try:
            await conn.execute(self._q(sql), args)
            await conn.commit()
        finally:
            self._release(conn)

    async def close(self) -> None:
        for conn in self._free:
            await conn.close()


def _sqlite_param(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, datetime):
        return (
            value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
        )
    return value


def _sqlite_value(kind: str, value: Any) -> Any:
    if value is None or not kind:
        return value
    if kind == U:
        return uuid.UUID(hex=value)
    if kind == T:
        return datetime.fromisoformat(value)  # naive UTC; orjson writes it with Z
    return bool(value)


def _as_uuid(value: Any) -> uuid.UUID:
    return value if type(value) is uuid.UUID else uuid.UUID(str(value))


class _Refused(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        self.status, self.code, self.detail = status, code, detail


class Baseline:
    """The ASGI callable."""

    def __init__(
        self,
        db: Database,
        limiter: RateLimiter,
        cursor_keys: cursor.CursorKeys,
        limits: tuple[Limit, ...] = API_LIMITS,
        *,
        bypass_keys: bool = False,
    ) -> None:
        self.db = db
        self.limiter = limiter
        self.cursor_keys = cursor_keys
        self.limits = limits
        self._touched: dict[Any, datetime] = {}
        # G4's contrast: authenticate each (key, scope) once, then skip the lookup and the
        # counters, as hangar's `bypass` server does.
        self._bypass: dict[tuple[Any, ...], tuple[uuid.UUID, frozenset[str]]] | None = (
            {} if bypass_keys else None
        )

    # --- plumbing ---------------------------------------------------------------------

    def _args(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(_sqlite_param(a) for a in args) if self.db.sqlite else args

    async def _rows(
        self, sql: str, columns: Sequence[tuple[str, str]], *args: Any
    ) -> list[dict[str, Any]]:
        raw = await self.db.fetch(sql, *self._args(args))
        names = tuple(n for n, _ in columns)
        if not self.db.sqlite:
            return [dict(zip(names, row, strict=True)) for row in raw]
        kinds = tuple(k for _, k in columns)
        return [
            {n: _sqlite_value(k, v) for n, k, v in zip(names, kinds, row, strict=True)}
            for row in raw
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            status, body = 200, await self._route(scope)
        except _Refused as exc:
            status, body = exc.status, orjson.dumps({"detail": exc.detail, "code": exc.code})
        await send_json(send, status, body)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.db.open()
                gc.collect()  # and freeze what exists, as hangar's app does once it is up
                gc.freeze()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.db.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _route(self, scope: Scope) -> bytes:
        path: str = scope["path"]
        if path == "/api/health":
            return b'{"status":"ok"}'
        if not path.startswith(PREFIX):
            raise _Refused(404, "NOT_FOUND", "Not Found")
        what = path[len(PREFIX) :]
        query = dict(parse_qsl(scope["query_string"].decode()))
        if what == "/reservations":
            org_id, _ = await self._authenticate(scope, "read:reservations")
            return await self._reservations(org_id, query)
        if what == "/aircraft":
            org_id, _ = await self._authenticate(scope, "read:aircraft")
            return dumps(await self._rows(SQL_AIRCRAFT, AIRCRAFT_COLUMNS, org_id))
        if what == "/members":
            org_id, scopes = await self._authenticate(scope, "read:members")
            if "read:members.full" in scopes:
                cols = MEMBER_COLUMNS + CONTACT_COLUMNS
                return dumps(await self._rows(SQL_MEMBERS_FULL, cols, org_id))
            return dumps(await self._rows(SQL_MEMBERS, MEMBER_COLUMNS, org_id))
        raise _Refused(404, "NOT_FOUND", "Not Found")

    # --- the key, the counters, the scope ---------------------------------------------

    async def _authenticate(self, scope: Scope, needed: str) -> tuple[uuid.UUID, frozenset[str]]:
        if self._bypass is None:
            return await self._check_key(scope, needed)
        known = (tuple(scope["headers"]), needed)
        found = self._bypass.get(known)
        if found is None:
            found = self._bypass[known] = await self._check_key(scope, needed)
        return found

    async def _check_key(self, scope: Scope, needed: str) -> tuple[uuid.UUID, frozenset[str]]:
        raw = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                kind, _, token = value.decode("latin-1").partition(" ")
                raw = token.strip() if kind.lower() == "bearer" else None
                break
        if not raw:
            raise _Refused(401, "UNAUTHORIZED", "A bearer token is required")
        if _KEY_RE.fullmatch(raw) is None:
            raise _Refused(401, "UNAUTHORIZED", "The API key is invalid or revoked")
        now = datetime.now(UTC)
        digest = hashlib.sha256(raw.encode()).hexdigest()
        rows = await self.db.fetch(SQL_KEY, digest)
        if not rows:
            raise _Refused(401, "UNAUTHORIZED", "The API key is invalid or revoked")
        key_id, org_id, key_hash, scopes, expires_at, revoked_at, last_used = rows[0]
        if self.db.sqlite:
            key_id, org_id = uuid.UUID(hex=key_id), uuid.UUID(hex=org_id)
            expires_at = _sqlite_value(T, expires_at)
            revoked_at = _sqlite_value(T, revoked_at)
            last_used = _sqlite_value(T, last_used)
            expires_at = expires_at and expires_at.replace(tzinfo=UTC)
            last_used = last_used and last_used.replace(tzinfo=UTC)
        if (
            not hmac.compare_digest(key_hash, digest)
            or revoked_at is not None
            or (expires_at is not None and expires_at <= now)
        ):
            raise _Refused(401, "UNAUTHORIZED", "The API key is invalid or revoked")
        last = self._touched.get(key_id) or last_used
        if last is None or now - last >= timedelta(minutes=1):
            self._touched[key_id] = now
            await self.db.execute(SQL_TOUCH, *self._args((now, key_id)))
        refused = await self.limiter.hit(f"key:{key_id}", self.limits, now)
        if refused is not None:
            raise _Refused(429, "RATE_LIMITED", f"Rate limit exceeded: {refused.label}")
        granted = frozenset(orjson.loads(scopes) if isinstance(scopes, str | bytes) else scopes)
        if needed not in granted:
            raise _Refused(403, "INSUFFICIENT_SCOPE", f"This API key lacks the scope {needed}")
        return _as_uuid(org_id), granted

    # --- /reservations ------------------------------------------------------------------

    async def _reservations(self, org_id: uuid.UUID, query: dict[str, str]) -> bytes:
        limit = int(query.get("limit", "100"))
        after = query.get("after")
        offset = query.get("offset")  # bench-only: the OFFSET contrast of G3
        context = "||||"
        position = cursor.decode(self.cursor_keys, org_id, context, after) if after else None
        rows: list[dict[str, Any]] = []
        if offset is not None:
            rows = await self._rows(SQL_DATED_OFFSET, RES_COLUMNS, org_id, limit, int(offset))
        elif position is None:
            rows = await self._rows(SQL_DATED_FIRST, RES_COLUMNS, org_id, limit)
        elif position.start_time is not None:
            rows = await self._rows(
                SQL_DATED_AFTER, RES_COLUMNS, org_id, position.start_time, position.id, limit
            )
        if len(rows) < limit and offset is None:
            if position is not None and position.start_time is None:
                rows += await self._rows(
                    SQL_UNDATED_AFTER, RES_COLUMNS, org_id, position.id, limit - len(rows)
                )
            else:
                rows += await self._rows(SQL_UNDATED, RES_COLUMNS, org_id, limit - len(rows))
        next_cursor = None
        if len(rows) == limit:
            last = rows[-1]
            start = last["start_time"]
            if start is not None and start.tzinfo is None:
                start = start.replace(tzinfo=UTC)
            next_cursor = cursor.encode(
                self.cursor_keys,
                org_id,
                context,
                cursor.Position(start_time=start, id=_as_uuid(last["id"])),
            )
        return dumps({"items": rows, "next_cursor": next_cursor})
