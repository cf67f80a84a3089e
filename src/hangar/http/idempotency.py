"""`Idempotency-Key` on the management API's POSTs (every POST under /api/orgs/{org_id}):
a request sent again with the same key is answered with the first one's answer, and
`Idempotent-Replayed: true`, not done again (interfaces.md §9; Stripe's rules).

Two places, both here, make it work for every such route at once:

- `claim`, called by hangar.http.access's `acting` once the caller may act (a refusal before
  that, 401, 403 or 404, takes no key and keeps nothing): the key checked (400
  IDEMPOTENCY_KEY_INVALID), then claimed in a short transaction of its own, committed before
  the action's (`Tx`) begins, so that the same key sent meanwhile is answered 409
  IDEMPOTENCY_KEY_IN_USE. The key is the organization's and the account's
  (hangar.idempotency.models says why); the same key with another method, path or body is
  422 IDEMPOTENCY_KEY_REUSED. A key already answered raises `_Replay`.
- `settling`, around every JSON route (hangar.http.routing.JsonRoute): it answers a
  `_Replay` with the kept answer; and once a route that claimed a key has answered (the
  action's transaction committed by then: `Tx` closes before the answer is sent), it keeps
  the answer before sending it (so a retry sent the moment the answer arrives finds it), or
  lets the key go (hangar.idempotency.replay.kept says which). A route that raises lets
  its key go.

The kept answer, secrets and all, is sealed at rest and never logged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from fastapi import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hangar.foundation.crypto import SecretUnreadable
from hangar.idempotency import replay as idempotency
from hangar.idempotency.replay import Answer, Claimed, Kept, Refused
from hangar.kit.container import Services
from hangar.kit.errors import ApiError, Conflict
from hangar.orgs.actors import Actor

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
# Where `settling` leaves what `claim` took, in the request's ASGI scope.
_HELD = "hangar.idempotency"

log = logging.getLogger("hangar")


@dataclass
class _Held:
    services: Services | None = None
    claimed: Claimed | None = None


class _Replay(Exception):
    def __init__(self, answer: Answer) -> None:
        super().__init__("replayed")
        self.answer = answer


def _in_use() -> Conflict:
    return Conflict(
        "A request with this Idempotency-Key is still being answered: send it again once "
        "that one has its answer",
        "IDEMPOTENCY_KEY_IN_USE",
    )


def _reused(detail: str | None = None) -> ApiError:
    return ApiError(
        422,
        "IDEMPOTENCY_KEY_REUSED",
        detail
        or "This Idempotency-Key was sent with another request (method, path or body): "
        "use a new key for a new request",
    )


async def claim(request: Request, services: Services, actor: Actor) -> None:
    """For a POST with an Idempotency-Key: the key claimed for this request, or the request
    answered without running (the first answer replayed, 409, 422). Nothing otherwise."""
    if request.method != "POST":
        return
    values = request.headers.getlist(HEADER)
    if not values:
        return
    held: _Held | None = request.scope.get(_HELD)
    if held is None:
        raise RuntimeError("an Idempotency-Key on a route that JsonRoute does not settle")
    if held.claimed is not None:
        return  # claimed by this request already (a route with two `acting`)
    key = idempotency.checked_key(values)
    body = await request.body()
    same = idempotency.fingerprint(request.method, request.url.path, request.url.query, body)
    scope = idempotency.Scope(actor.org_id, actor.user_id, key)
    found = await idempotency.claim(services.engine, scope, same, services.clock.now())
    if isinstance(found, Claimed):
        held.services, held.claimed = services, found
    elif isinstance(found, Kept):
        raise _Replay(_opened(services, found))
    elif found is Refused.REUSED:
        raise _reused()
    else:
        raise _in_use()


def _opened(services: Services, found: Kept) -> Answer:
    try:
        return Answer.opened(idempotency.answer_box(services.settings), found)
    except SecretUnreadable:
        # Sealed under a key since removed from HANGAR_SECRET_KEY_PREVIOUS: the request was
        # done, and must not be done again; its answer can no longer be shown.
        raise _reused(
            "This Idempotency-Key's request was done, but its answer can no longer be read "
            "(sealed under a secret key since removed): use a new key to do it again"
        ) from None


def _replayed(answer: Answer) -> Response:
    response = Response(answer.body, status_code=answer.status)
    for name, value in answer.headers:
        response.headers.append(name, value)
    response.headers[REPLAYED] = "true"
    return response


async def _settle(held: _Held, claimed: Claimed, messages: list[Message]) -> None:
    """Keeps the answer in `messages` for the key, or lets the key go."""
    assert held.services is not None
    services = held.services
    start = messages[0]
    status: int = start["status"]
    try:
        if not idempotency.kept(status):
            await idempotency.let_go(services.engine, claimed)
            return
        headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in start["headers"]]
        body = b"".join(m.get("body", b"") for m in messages[1:])
        answer = Answer.of(status, headers, body)
        sealed = answer.sealed(idempotency.answer_box(services.settings))
        if not await idempotency.keep(services.engine, claimed, status, sealed):
            log.warning("idempotency: a claim taken over as abandoned answered after all")
    except Exception as exc:  # the client still gets its answer: the action is done
        # The class alone: the message could quote the statement's values.
        log.warning("idempotency: the answer could not be kept (%s)", type(exc).__name__)


async def _let_go(services: Services, claimed: Claimed) -> None:
    """The key let go after the route raised; a failure here is logged, not raised over the
    route's own (the claim is then taken over once abandoned)."""
    try:
        await idempotency.let_go(services.engine, claimed)
    except Exception as exc:
        log.warning("idempotency: a key could not be let go (%s)", type(exc).__name__)


def settling(app: ASGIApp) -> ASGIApp:
    """`app` (a JSON route) answering replays, and keeping or letting go of the key that a
    request claimed once its answer is complete, before it is sent."""

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        held = _Held()
        scope[_HELD] = held
        messages: list[Message] = []

        async def hold(message: Message) -> None:
            claimed = held.claimed
            if claimed is None:
                await send(message)
                return
            messages.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                held.claimed = None  # settled once, whatever happens next
                await _settle(held, claimed, messages)
                for kept in messages:
                    await send(kept)

        try:
            await app(scope, receive, hold)
        except _Replay as replay:
            await _replayed(replay.answer)(scope, receive, send)
        except BaseException:
            claimed, held.claimed = held.claimed, None
            if claimed is not None and held.services is not None:
                await _let_go(held.services, claimed)
            raise

    return answer
