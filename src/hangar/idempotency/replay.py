"""Idempotency keys' face, for hangar.http.idempotency (the header and the answer replayed)
and the retention job: the key's rules, the request's fingerprint, which answers are kept,
the answer sealed at rest, and the claim's statements (hangar.idempotency.claims). Not named
`service`: the HTTP plumbing may use it (pyproject.toml's "The read API imports no writes"
keeps hangar.http from every feature's service).

Which answers are kept (as Stripe's, but never a 5xx): a 2xx, and a 4xx the request earned
(404 for an unknown subscription, 422 for a body that fails validation or a limit reached),
for the same request will earn it again. Not kept, so that the same request sent again runs
again: a 5xx (hangar's own failure, or the database's), a 409 (the key in use, a recovery
still running, a state that may change: a "not now") and a 429 (a budget that refills). An
error answer changed nothing (the action's transaction rolled back), so letting its key go
never lets an action happen twice.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from hangar.foundation.config import Settings
from hangar.foundation.crypto import SecretBox
from hangar.idempotency.claims import ABANDONED_AFTER as ABANDONED_AFTER
from hangar.idempotency.claims import KEPT as KEPT
from hangar.idempotency.claims import TABLE as TABLE
from hangar.idempotency.claims import Claimed as Claimed
from hangar.idempotency.claims import Kept as Kept
from hangar.idempotency.claims import Refused as Refused
from hangar.idempotency.claims import Scope as Scope
from hangar.idempotency.claims import claim as claim
from hangar.idempotency.claims import expired as expired
from hangar.idempotency.claims import keep as keep
from hangar.idempotency.claims import let_go as let_go
from hangar.kit.errors import ApiError

# The purpose the kept answers are sealed under; changing it would leave every one
# unreadable (they live a day: the same request would then be refused, not done again).
ANSWERS_PURPOSE = "idempotent-answers"

MAX_KEY_LENGTH = 255
# Printable ASCII, the space included (a header's value has no leading or trailing space).
_KEY = re.compile(r"[\x20-\x7e]{1,255}")

# The answer's headers that are the response's own, made again when it is replayed: its
# length, and what is about the connection. No route under /api/orgs sets a cookie; none is
# ever kept.
_NOT_KEPT_HEADERS = frozenset({"content-length", "connection", "transfer-encoding", "set-cookie"})


def invalid_key(detail: str) -> ApiError:
    return ApiError(400, "IDEMPOTENCY_KEY_INVALID", detail)


def checked_key(values: list[str]) -> str:
    """The `Idempotency-Key` header's one value: 1 to 255 printable ASCII characters; 400
    IDEMPOTENCY_KEY_INVALID otherwise (Stripe answers a bad key with a 400)."""
    if len(values) != 1:
        raise invalid_key("Send one Idempotency-Key header, not several")
    key = values[0]
    if not _KEY.fullmatch(key):
        raise invalid_key(
            f"An Idempotency-Key is 1 to {MAX_KEY_LENGTH} printable ASCII characters "
            "(a UUID is a good one)"
        )
    return key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key appears twice")
    return found


def _canonical(body: bytes) -> bytes:
    """A JSON body with its keys sorted and no spaces, so that the same request sent again
    by a client that orders or spaces it otherwise is still the same request; anything else
    (not JSON, or JSON that names a key twice, which the routes refuse) as it came."""
    try:
        parsed = json.loads(body, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        return body
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def fingerprint(method: str, path: str, query: str, body: bytes) -> str:
    """What "the same request" means: SHA-256 of the method, the path, the query and the body
    (as JSON, see `_canonical`), each apart from the next."""
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode(), query.encode()):
        digest.update(len(part).to_bytes(8, "big") + part)
    digest.update(_canonical(body))
    return digest.hexdigest()


def kept(status: int) -> bool:
    """Whether an answer with `status` is kept for its key (the module's docstring says why)."""
    return 200 <= status < 300 or (400 <= status < 500 and status not in (409, 429))


def answer_box(settings: Settings) -> SecretBox:
    return SecretBox(settings.secret_key, ANSWERS_PURPOSE, settings.previous_secret_keys)


@dataclass(frozen=True)
class Answer:
    """An answer as the route gave it: its status, its headers (those worth keeping) and its
    body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    @classmethod
    def of(cls, status: int, headers: list[tuple[str, str]], body: bytes) -> Answer:
        worth = [(n, v) for n, v in headers if n.lower() not in _NOT_KEPT_HEADERS]
        return cls(status, worth, body)

    def sealed(self, box: SecretBox) -> str:
        """The headers and body, sealed: a new key's or webhook's answer holds its secret."""
        plain = {
            "headers": [list(pair) for pair in self.headers],
            "body": base64.b64encode(self.body).decode(),
        }
        return box.seal(json.dumps(plain, separators=(",", ":")))

    @classmethod
    def opened(cls, box: SecretBox, found: Kept) -> Answer:
        """The kept answer; SecretUnreadable when sealed under a key no longer configured."""
        plain = json.loads(box.open(found.answer_sealed))
        headers = [(str(n), str(v)) for n, v in plain["headers"]]
        return cls(found.status, headers, base64.b64decode(plain["body"]))
