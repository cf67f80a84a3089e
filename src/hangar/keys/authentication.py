"""Authenticating a request by API key: who it is, whether it may call, and how often.

Order of checks: the key (401), the rate limit (429), then the scope (403).
"""

from __future__ import annotations

import hmac
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, bindparam, select, update

from hangar.db.read_pool import read_connection
from hangar.db.reads import Read, ReadConnection
from hangar.foundation.crypto import token_digest
from hangar.keys.key_format import KEY_PREFIX as KEY_PREFIX  # what the access log redacts
from hangar.keys.key_format import is_well_formed
from hangar.keys.models import ApiKey
from hangar.kit.container import Services
from hangar.kit.errors import Forbidden, RateLimited, Unauthorized, bearer_challenge
from hangar.kit.ratelimit import API_LIMITS
from hangar.kit.scoping import KeyContext

MISSING = "A bearer token is required: send Authorization: Bearer <API_KEY>"
MISSING_TOKEN = "An API key is required in the token query parameter"  # noqa: S105 (a message)
INVALID = "The API key is invalid or revoked"
# RFC 6750 §3's challenges: no error code when no key came (§3.1: the client may not know
# that one is needed), `invalid_token` for one that is malformed, unknown, revoked or expired.
# The feed's key travels in the query rather than the header, still a bearer token (§2.3).
NO_KEY_CHALLENGE = bearer_challenge()
BAD_KEY_CHALLENGE = bearer_challenge("invalid_token")
# last_used_at is a hint for administrators, not an audit log: one write a minute is plenty.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class KeyLookup:
    """The statement that looks a key up, built once: the digest is its one parameter.

    `also` gives an operation columns of its own, read of the key's organization in the
    same statement (given the organization's id column): what it learns there can spare it a
    round trip of its own (the events API's poll that finds nothing new:
    hangar.webhooks.events.event_log.log_end). They are read before the key is judged, and never
    reach a caller the key is not good for.
    """

    def __init__(
        self, also: Callable[[ColumnElement[uuid.UUID]], Sequence[ColumnElement[Any]]] | None = None
    ) -> None:
        self.read: Read[dict[str, Any]] = Read(
            select(
                ApiKey.id,
                ApiKey.org_id,
                ApiKey.key_hash,
                ApiKey.prefix,
                ApiKey.scopes,
                ApiKey.expires_at,
                ApiKey.revoked_at,
                ApiKey.last_used_at,
                *(also(ApiKey.org_id.expression) if also is not None else ()),
            ).where(ApiKey.key_hash == bindparam("digest", type_=ApiKey.key_hash.type))
        )


KEY_ONLY = KeyLookup()


class KeyAuthenticator:
    def __init__(self, services: Services) -> None:
        self._services = services
        self._touched: dict[uuid.UUID, datetime] = {}

    @staticmethod
    def refuse_malformed(raw_key: str | None, missing: str) -> str:
        """The key, if it can be one: a missing or malformed key is refused (401) before
        any database work."""
        if not raw_key:
            raise Unauthorized(missing, challenge=NO_KEY_CHALLENGE)
        if not is_well_formed(raw_key):
            raise Unauthorized(INVALID, challenge=BAD_KEY_CHALLENGE)
        return raw_key

    async def authenticate(
        self,
        raw_key: str | None,
        scope: str,
        *,
        missing: str,
        conn: ReadConnection | None = None,
    ) -> KeyContext:
        """The caller of `raw_key`, allowed `scope`. The key is looked up on `conn` (the
        request's read connection, so a request checks out one connection, not two), or on
        a connection of its own."""
        key = self.refuse_malformed(raw_key, missing)
        if conn is None:
            async with read_connection(self._services.engine) as own:
                return (await self._authenticate(own, key, scope, KEY_ONLY))[0]
        return (await self._authenticate(conn, key, scope, KEY_ONLY))[0]

    async def authenticate_with(
        self,
        raw_key: str | None,
        scope: str | None,
        *,
        missing: str,
        conn: ReadConnection,
        lookup: KeyLookup,
    ) -> tuple[KeyContext, dict[str, Any]]:
        """`authenticate`, looking the key up with `lookup`: the caller, and the key's row
        with the columns `lookup` also read. A `scope` of None: any valid key will do."""
        return await self._authenticate(
            conn, self.refuse_malformed(raw_key, missing), scope, lookup
        )

    async def _authenticate(
        self, conn: ReadConnection, raw_key: str, scope: str | None, lookup: KeyLookup
    ) -> tuple[KeyContext, dict[str, Any]]:
        services = self._services
        now = services.clock.now()
        digest = token_digest(raw_key)
        found = await lookup.read.rows(conn, {"digest": digest})
        row = found[0] if found else None
        if (
            row is None
            or not hmac.compare_digest(row["key_hash"], digest)
            or row["revoked_at"] is not None
            or (row["expires_at"] is not None and row["expires_at"] <= now)
        ):
            raise Unauthorized(INVALID, challenge=BAD_KEY_CHALLENGE)
        key_id: uuid.UUID = row["id"]
        if self._due_for_touch(key_id, row["last_used_at"], now):
            # A write of its own, at most once a minute: the read connection stays read-only.
            async with services.engine.begin() as write:
                await write.execute(
                    update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=now)
                )
        refused = await services.limiter.hit(f"key:{key_id}", API_LIMITS, now)
        if refused is not None:
            raise RateLimited(f"Rate limit exceeded: {refused.label} per API key")
        scopes = frozenset(row["scopes"] or ())
        if scope is not None and scope not in scopes:
            refusal = Forbidden(f"This API key lacks the scope {scope}", "INSUFFICIENT_SCOPE")
            # RFC 6750 §3.1: the 403 names the scope the key would need.
            refusal.headers["WWW-Authenticate"] = bearer_challenge("insufficient_scope", scope)
            raise refusal
        return KeyContext(key_id=key_id, org_id=row["org_id"], scopes=scopes), row

    def _due_for_touch(self, key_id: uuid.UUID, stored: datetime | None, now: datetime) -> bool:
        last = self._touched.get(key_id) or stored
        if last is not None and now - last < LAST_USED_RESOLUTION:
            return False
        if len(self._touched) > 100_000:
            self._touched.clear()
        self._touched[key_id] = now
        return True
