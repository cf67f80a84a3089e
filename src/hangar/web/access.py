"""Who is looking at a settings page, and whether they may: sessions, org scoping, CSRF.

The same decision as the JSON API's (orgs/actors.py actor_in and may), presented as pages:
no session is a redirect to /login; an organization the user is not a member of is 404 (its
existence is not revealed); a member without org.settings gets a refusal page (403). The CSRF token
travels as a hidden form field instead of a header and is compared in constant time.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, Request
from starlette.datastructures import FormData
from starlette.responses import HTMLResponse, Response

from hangar.audit.service import Who
from hangar.auth import passwords, sessions
from hangar.foundation.ids import parse_id
from hangar.http.access import set_session_cookie
from hangar.http.routing import ServicesDep, client_of
from hangar.kit.container import Services
from hangar.orgs import actors
from hangar.orgs.actors import MembershipView, actor_in, may
from hangar.orgs.capabilities import ORG_SETTINGS
from hangar.web.pages import PageExit, error_page, redirect, render
from hangar.webhooks import service as webhooks
from hangar.webhooks.service import DisabledView

CSRF_FIELD = "csrf_token"
# A form post is a few fields; anything larger is not ours.
MAX_FORM_FIELDS = 100


@dataclass(frozen=True)
class Viewer:
    """A signed-in user and the organizations they belong to."""

    session: sessions.SignedIn
    memberships: list[MembershipView]

    @property
    def admin_orgs(self) -> list[MembershipView]:
        return [m for m in self.memberships if ORG_SETTINGS in m["capabilities"]]


@dataclass(frozen=True)
class Admin:
    """A signed-in user acting in one organization where they hold org.settings."""

    viewer: Viewer
    org_id: uuid.UUID
    org_name: str
    # The organization's webhooks disabled now: every settings page says so in a banner,
    # linking to each, until they are enabled (or deleted).
    disabled_webhooks: tuple[DisabledView, ...] = ()
    # Where the request came from (hangar.http.client_address): what the audit log records.
    client_address: str | None = None

    @property
    def user_id(self) -> uuid.UUID:
        return self.viewer.session.user_id

    @property
    def who(self) -> Who:
        """The admin as the audit log records them: account, email, client address."""
        session = self.viewer.session
        return Who.person(session.user_id, session.email, self.client_address)

    @property
    def csrf_token(self) -> str:
        return self.viewer.session.csrf_token

    def page(self, **context: Any) -> dict[str, Any]:
        """What every settings template needs besides its own data."""
        return {
            "admin": self,
            "viewer": self.viewer,
            "csrf_token": self.csrf_token,
            "base": f"/settings/{self.org_id}",
            **context,
        }


async def viewer_of(request: Request, services: Services) -> Viewer:
    # The session's own short transaction, committed before any action's (`Tx`) begins: a
    # refused action still slides the idle window, and on SQLite the touch's write lock is
    # not held for the rest of the request.
    async with services.engine.begin() as conn:
        signed_in = await sessions.resume(
            conn, request.cookies.get(sessions.COOKIE), services.clock.now()
        )
        if signed_in is None:
            target = quote(request.url.path, safe="/")
            raise PageExit(redirect(f"/login?next={target}"))
        orgs = await actors.memberships(conn, signed_in.user_id)
    return Viewer(signed_in, orgs)


async def viewer_page(request: Request, services: ServicesDep) -> Viewer:
    return await viewer_of(request, services)


ViewerPage = Annotated[Viewer, Depends(viewer_page)]


async def viewer_if_signed_in(request: Request, services: ServicesDep) -> Viewer | None:
    try:
        return await viewer_of(request, services)
    except PageExit:
        return None


MaybeViewer = Annotated[Viewer | None, Depends(viewer_if_signed_in)]


async def admin_page(request: Request, services: ServicesDep, org_id: str) -> Admin:
    """The JSON API's decision (orgs.actors.actor_in and may), presented as pages: the
    settings screens' dependency for `/settings/{org_id}/...`."""
    viewer = await viewer_of(request, services)
    org_id_parsed = parse_id(org_id)
    actor = None
    disabled: list[DisabledView] = []
    if org_id_parsed is not None:
        async with services.engine.connect() as conn:
            actor = await actor_in(conn, viewer.session, org_id_parsed)
            if actor is not None and may(actor, ORG_SETTINGS):
                disabled = await webhooks.disabled(conn, org_id_parsed)
    # The name is the page's heading; a membership gone since the viewer's list was read is
    # as unknown as any other.
    org_name = next(
        (m["org_name"] for m in viewer.memberships if m["org_id"] == str(org_id_parsed)), None
    )
    if org_id_parsed is None or actor is None or org_name is None:
        raise PageExit(error_page(request, 404, "Not found", "There is no such page."))
    if not may(actor, ORG_SETTINGS):
        if ORG_SETTINGS in actor.withheld:
            raise PageExit(two_factor_first(request, viewer, org_name))
        raise PageExit(refusal(request, viewer))
    return Admin(viewer, org_id_parsed, org_name, tuple(disabled), client_of(request))


AdminPage = Annotated[Admin, Depends(admin_page)]


def two_factor_first(request: Request, viewer: Viewer, org_name: str) -> HTMLResponse:
    """An admin of an organization that requires two-factor sign-in, without it: the way to
    set it up (the JSON API's 403 TWO_FACTOR_REQUIRED, as a page)."""
    return render(
        request,
        "two_factor_required.html",
        403,
        viewer=viewer,
        csrf_token=viewer.session.csrf_token,
        org_name=org_name,
    )


def refusal(request: Request, viewer: Viewer) -> HTMLResponse:
    return render(
        request,
        "refused.html",
        403,
        viewer=viewer,
        csrf_token=viewer.session.csrf_token,
    )


async def checked_form(request: Request, csrf_token: str) -> FormData:
    """The posted form, once its CSRF field matches the session's token."""
    form = await request.form(max_fields=MAX_FORM_FIELDS, max_files=0)
    given = form.get(CSRF_FIELD)
    if not sessions.csrf_ok(csrf_token, given if isinstance(given, str) else None):
        raise PageExit(
            error_page(
                request,
                403,
                "This form has expired",
                "The form was not sent from this page, or your session changed since it was "
                "opened. Go back, reload the page and try again.",
            )
        )
    return form


@dataclass(frozen=True)
class Submitted:
    """A settings form an admin posted, its CSRF field already checked."""

    admin: Admin
    form: FormData

    def text(self, name: str) -> str:
        return text(self.form, name)

    def texts(self, name: str) -> list[str]:
        return texts(self.form, name)


async def submitted(request: Request, admin: AdminPage) -> Submitted:
    return Submitted(admin, await checked_form(request, admin.csrf_token))


# A settings screen's POST: the admin (or the page that refuses them), then the form's CSRF
# field, both before the action's transaction (`Tx`, declared after it) begins.
AdminForm = Annotated[Submitted, Depends(submitted)]


@dataclass(frozen=True)
class DoubleSubmit:
    """The CSRF guard of a form posted before its person has a session (sign-in, choosing a
    password through an invitation), so there is no session token to carry: a random value in
    a short-lived cookie and the same value in a hidden field. Another site can make a browser
    post the form but cannot read or set the cookie.
    """

    cookie: str
    path: str

    def issue(self, services: Services, response: Response, token: str) -> None:
        response.set_cookie(
            self.cookie,
            token,
            max_age=3600,
            httponly=True,
            samesite="strict",
            secure=services.settings.public_url.startswith("https://"),
            path=self.path,
        )

    def holds(self, request: Request, form: FormData) -> bool:
        expected = request.cookies.get(self.cookie)
        given = form.get(CSRF_FIELD)
        return bool(expected) and sessions.csrf_ok(
            str(expected), given if isinstance(given, str) else None
        )

    def clear(self, response: Response) -> None:
        response.delete_cookie(self.cookie, path=self.path)

    def signed_in(self, services: Services, session_token: str, target: str) -> Response:
        """The answer to this form once it has started a session: to `target`, with the
        session cookie, and this form's guard cookie gone (sign-in, an invitation's or a
        reset link's password)."""
        response = redirect(target)
        set_session_cookie(response, services, session_token)
        self.clear(response)
        return response

    @staticmethod
    def new_token() -> str:
        return secrets.token_urlsafe(32)


def text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def texts(form: FormData, name: str) -> list[str]:
    return [v for v in form.getlist(name) if isinstance(v, str)]


def chosen_password(form: FormData) -> tuple[str, str | None]:
    """The password a person chose on an invitation's or a reset link's page (typed twice),
    and what is wrong with it in words, or None: the one password rule
    (hangar.auth.passwords)."""
    password, repeated = text(form, "password"), text(form, "password_again")
    if not passwords.MIN_LENGTH <= len(password) <= passwords.MAX_LENGTH:
        return password, (
            f"Choose a password of {passwords.MIN_LENGTH} to {passwords.MAX_LENGTH} characters."
        )
    if password != repeated:
        return password, "The two passwords differ. Type the same password twice."
    return password, None
