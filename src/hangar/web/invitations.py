"""/invitations/{token}: the page an invited person opens, the same rules (and the same
functions, orgs.invitations) as the session API.

- No account with the invited email has a password yet: a form to choose it; sending it
  accepts and signs the person in. No session exists yet to hold a CSRF token, so the form
  carries a double-submit token as /login does (otherwise another site could sign a visitor
  into an account of its own making).
- Otherwise: signed in as the invited email, an Accept button (the session's CSRF token);
  signed in as someone else, a way to sign out; not signed in, a link to sign in as the
  invited email, which comes back here.
- An unusable link: one 404 page, whatever the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from hangar.accounts import invitation_service
from hangar.accounts.session_service import set_session_cookie
from hangar.auth import sessions
from hangar.kit.errors import ApiError
from hangar.kit.routing import Now, ServicesDep, Tx
from hangar.kit.services import Services
from hangar.orgs import invitations
from hangar.web.access import DoubleSubmit, checked_form, text
from hangar.web.pages import PageExit, PageRoute, error_page, redirect, render

router = APIRouter(route_class=PageRoute)

INVITE_CSRF_COOKIE = "hangar_invite_csrf"
PASSWORD_FORM = DoubleSubmit(INVITE_CSRF_COOKIE, "/invitations")
MIN_PASSWORD = 8
MAX_PASSWORD = 1024


def _gone(request: Request) -> PageExit:
    return PageExit(
        error_page(
            request,
            404,
            "Invitation not valid",
            "This invitation link is not valid or has expired. Links work once and for "
            f"{invitations.LIFETIME.days} days: ask the organization's administrator for a "
            "new one.",
        )
    )


@dataclass(frozen=True)
class Opened:
    """A usable link, and the visitor's session if they have one."""

    found: invitations.Open
    signed_in: sessions.SignedIn | None


async def opened(request: Request, services: ServicesDep, token: str) -> Opened:
    # The link and the session in one short transaction of their own (the session's touch
    # commits before any action's `Tx` begins).
    now = services.clock.now()
    async with services.engine.begin() as conn:
        found = await invitations.find(conn, token, now)
        signed_in = await sessions.resume(conn, request.cookies.get(sessions.COOKIE), now)
    if found is None:
        raise _gone(request)
    return Opened(found, signed_in)


OpenedLink = Annotated[Opened, Depends(opened)]


def _password_form(
    request: Request,
    services: Services,
    found: invitations.Open,
    token: str,
    *,
    status: int = 200,
    error: str = "",
) -> Response:
    csrf = PASSWORD_FORM.new_token()
    response = render(
        request,
        "invitation.html",
        status,
        invitation=found,
        token=token,
        form_csrf=csrf,
        error=error,
    )
    PASSWORD_FORM.issue(services, response, csrf)
    return response


def _accept_page(
    request: Request,
    found: invitations.Open,
    token: str,
    signed_in: sessions.SignedIn | None,
    *,
    status: int = 200,
    error: str = "",
) -> Response:
    """Accept (signed in as the invited email), or the way to get signed in as it."""
    return render(
        request,
        "invitation.html",
        status,
        invitation=found,
        token=token,
        accept_only=True,
        signed_in=signed_in,
        is_invitee=signed_in is not None and signed_in.email == found.email,
        csrf_token=signed_in.csrf_token if signed_in else "",
        error=error,
    )


@router.get("/invitations/{token}")
async def invitation_page(
    request: Request, services: ServicesDep, link: OpenedLink, token: str
) -> Response:
    if link.found.needs_password:
        return _password_form(request, services, link.found, token)
    return _accept_page(request, link.found, token, link.signed_in)


@router.post("/invitations/{token}/password")
async def choose_password_form(
    request: Request, services: ServicesDep, link: OpenedLink, token: str
) -> Response:
    found, signed_in = link.found, link.signed_in
    if not found.needs_password:
        raise _gone(request)
    form = await request.form(max_fields=10, max_files=0)
    if not PASSWORD_FORM.holds(request, form):
        return _password_form(
            request,
            services,
            found,
            token,
            status=403,
            error="The form had expired. Please choose your password again.",
        )
    password, again = text(form, "password"), text(form, "password_again")
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        error = f"Choose a password of {MIN_PASSWORD} to {MAX_PASSWORD} characters."
        return _password_form(request, services, found, token, status=422, error=error)
    if password != again:
        error = "The two passwords differ. Type the same password twice."
        return _password_form(request, services, found, token, status=422, error=error)
    try:
        new = await invitation_service.choose_password(services, token, password)
    except invitations.EmailTaken as taken:
        # Another organization's link made the account a moment ago: sign in and accept.
        return _accept_page(request, found, token, signed_in, status=409, error=taken.detail)
    except ApiError as refused:  # used or removed since the page was opened
        raise _gone(request) from refused
    response = redirect("/settings")
    set_session_cookie(response, services, new.token)
    PASSWORD_FORM.clear(response)
    return response


@router.post("/invitations/{token}/accept")
async def accept_form(
    request: Request, link: OpenedLink, conn: Tx, now: Now, token: str
) -> Response:
    signed_in = link.signed_in
    if signed_in is None:
        return redirect(f"/login?next=/invitations/{token}")
    await checked_form(request, signed_in.csrf_token)
    try:
        await invitation_service.accept(conn, token, signed_in.user_id, now)
    except ApiError as refused:
        if refused.status != 404:  # a member already: the error page says so
            raise
        raise _gone(request) from refused  # someone else's link, or used meanwhile
    return redirect("/settings")
