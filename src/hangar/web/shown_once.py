"""A secret shown once, after the redirect of the action that made it (POST/redirect/GET):
a new API key, a rotated key, a new webhook's signing secret, a rotated one, two-factor
recovery codes.

The action's POST commits, then answers 303 to the secret's one-time view (a GET page such as
`/settings/{org_id}/keys/{key_id}/shown`): a reload or Back repeats that GET, never the
action. Between the two the secret is held in a short-lived cookie, and nowhere else:

- sealed with the app's secret box under a purpose of its own (`shown-once`, a key derived
  from HANGAR_SECRET_KEY like the webhook secrets' box, never shared with it), so neither
  the browser nor anything between it and hangar can read or forge it;
- bound, inside the seal, to the session that acted and to the view's path (which names the
  organization and the key or subscription), and dated by the injected clock: another
  session's cookie, or one moved to another view, or an old one, shows nothing;
- HttpOnly, Secure behind https as the session cookie is, SameSite=Strict, Path limited to
  the one view (no other request carries it), Max-Age a few minutes;
- the view's answer deletes it, so a reload says the secret was shown once and shows none.

Why not the database: a row would need a migration and a sweep, and a secret kept there
even briefly is one more place a dump holds it; the keys and recovery codes are stored only
hashed. Why not the URL: URLs are kept in history, logs and Referer headers. What remains:
whoever holds both this session's cookie and this cookie, within its few minutes, could
fetch the view once more; that person holds the session, which can rotate the secret anyway.
"""

from __future__ import annotations

import json
from datetime import timedelta
from functools import lru_cache
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hangar.auth.sessions import SignedIn
from hangar.foundation.crypto import SecretBox, SecretUnreadable
from hangar.kit.container import Services
from hangar.web.pages import redirect

COOKIE = "hangar_shown_once"
# Long enough for a slow redirect on a slow link; short enough that a cookie left behind (a
# view never reached) is soon gone from the browser.
LIFETIME = timedelta(minutes=5)
# The secret box's purpose: its own key, derived from HANGAR_SECRET_KEY (foundation.crypto).
PURPOSE = "shown-once"


@lru_cache(maxsize=4)
def _box(secret_key: str, previous: tuple[str, ...]) -> SecretBox:
    return SecretBox(secret_key, PURPOSE, previous)


def box(services: Services) -> SecretBox:
    settings = services.settings
    return _box(settings.secret_key, tuple(settings.previous_secret_keys))


def _secure(services: Services) -> bool:
    return services.settings.public_url.startswith("https://")


def hand_over(services: Services, session: SignedIn, view: str, secret: dict[str, Any]) -> Response:
    """The action's answer once it has committed: 303 to `view`, carrying `secret` (what
    the view shows once: the key, the signing secret, the codes, and what it needs to
    say with them) sealed in the view's cookie. `view` is a path, and holds no secret."""
    until = services.clock.now() + LIFETIME
    held = {"session": str(session.session_id), "view": view, "until": until.timestamp()}
    sealed = box(services).seal(json.dumps({**held, "secret": secret}))
    response = redirect(view)
    response.set_cookie(
        COOKIE,
        sealed,
        max_age=int(LIFETIME.total_seconds()),
        httponly=True,
        samesite="strict",
        secure=_secure(services),
        path=view,
    )
    return response


def take(
    request: Request, services: Services, session: SignedIn, view: str
) -> dict[str, Any] | None:
    """What the action handed over to `view` (the path as `hand_over` was given it, made
    from the ids the page resolved), for this session and while it lasts, or None: already
    shown, another session's or view's, expired, forged. The caller's answer must `forget`
    the cookie, whatever this returned."""
    sealed = request.cookies.get(COOKIE)
    if not sealed:
        return None
    try:
        held = json.loads(box(services).open(sealed))
    except (SecretUnreadable, ValueError):
        return None
    if not isinstance(held, dict):
        return None
    fresh = isinstance(held.get("until"), float | int) and (
        services.clock.now().timestamp() < held["until"]
    )
    mine = held.get("session") == str(session.session_id) and held.get("view") == view
    secret = held.get("secret")
    return secret if fresh and mine and isinstance(secret, dict) else None


def forget(response: Response, services: Services, view: str) -> Response:
    """`response`, deleting the view's cookie: the secret is shown by this answer only."""
    response.delete_cookie(
        COOKIE, path=view, secure=_secure(services), httponly=True, samesite="strict"
    )
    return response
