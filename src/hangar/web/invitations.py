"""/invitations/{token}: the page an invited person opens, the same rules (and the same
functions, orgs.invitations) as the session API.

The page never tells whether the invited email has an account: not signed in, everyone sees
the same two ways in, "new to hangar: choose a password" and "already have an account with
this email: sign in to accept". Choosing a password for an email that has an account is
refused there (409), saying to sign in or to ask the operator for a password reset link.

- Not signed in: the two ways. The password form carries a double-submit token as /login
  does (no session exists yet to hold a CSRF token; otherwise another site could sign a
  visitor into an account of its own making); sending it makes the account, accepts and
  signs the person in.
- Signed in as the invited email: an Accept button (the session's CSRF token).
- Signed in as someone else: a way to sign out, which comes back here.
- An unusable link: one 404 page, whatever the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from hangar.auth import sessions
from hangar.http.routing import Now, ServicesDep, Tx
from hangar.kit.container import Services
from hangar.kit.errors import ApiError, NotFound
from hangar.orgs import service as orgs
from hangar.web.access import DoubleSubmit, checked_form, chosen_password
from hangar.web.pages import PageExit, PageRoute, error_page, redirect, render

router = APIRouter(route_class=PageRoute)

INVITE_CSRF_COOKIE = "hangar_invite_csrf"
PASSWORD_FORM = DoubleSubmit(INVITE_CSRF_COOKIE, "/invitations")


def _gone(request: Request) -> PageExit:
    return PageExit(
        error_page(
            request,
            404,
            "Invitation not valid",
            "This invitation link is not valid or has expired. Links work once and for "
            f"{orgs.INVITATION_LIFETIME.days} days: ask the organization's administrator for a "
            "new one.",
        )
    )


@dataclass(frozen=True)
class Opened:
    """A usable link, and the visitor's session if they have one."""

    found: orgs.Open
    signed_in: sessions.SignedIn | None


async def opened(request: Request, services: ServicesDep, token: str) -> Opened:
    # The link and the session in one short transaction of their own (the session's touch
    # commits before any action's `Tx` begins).
    now = services.clock.now()
    async with services.engine.begin() as conn:
        signed_in = await sessions.resume(conn, request.cookies.get(sessions.COOKIE), now)
        try:
            found = await orgs.open_link(conn, token, now)
        except NotFound:
            found = None
    if found is None:
        raise _gone(request)
    return Opened(found, signed_in)


OpenedLink = Annotated[Opened, Depends(opened)]


def _page(
    request: Request,
    services: Services,
    found: orgs.Open,
    token: str,
    signed_in: sessions.SignedIn | None,
    *,
    status: int = 200,
    error: str = "",
    account_exists: bool = False,
) -> Response:
    """The page for this visitor: Accept (signed in as the invited email), a way out (signed
    in as someone else), or the same two ways in for everyone else, whatever the email's
    history. `account_exists`: the password form was just refused, so only signing in is left.
    """
    offer_form = signed_in is None and not account_exists
    csrf = PASSWORD_FORM.new_token() if offer_form else ""
    response = render(
        request,
        "invitation.html",
        status,
        invitation=found,
        token=token,
        offer_form=offer_form,
        form_csrf=csrf,
        signed_in=signed_in,
        is_invitee=signed_in is not None and signed_in.email == found.email,
        csrf_token=signed_in.csrf_token if signed_in else "",
        error=error,
    )
    if offer_form:
        PASSWORD_FORM.issue(services, response, csrf)
    return response


@router.get("/invitations/{token}")
async def invitation_page(
    request: Request, services: ServicesDep, link: OpenedLink, token: str
) -> Response:
    return _page(request, services, link.found, token, link.signed_in)


@router.post("/invitations/{token}/password")
async def choose_password_form(
    request: Request, services: ServicesDep, link: OpenedLink, token: str
) -> Response:
    found = link.found
    form = await request.form(max_fields=10, max_files=0)

    def again(status: int, error: str) -> Response:
        return _page(request, services, found, token, link.signed_in, status=status, error=error)

    if not PASSWORD_FORM.holds(request, form):
        return again(403, "The form had expired. Please choose your password again.")
    password, problem = chosen_password(form)
    if problem is not None:
        return again(422, problem)
    try:
        new = await orgs.choose_password(services, token, password)
    except orgs.AccountExists as exists:
        # The email has an account (perhaps made a moment ago by another organization's
        # link): only its holder, signed in, accepts.
        return _page(
            request,
            services,
            found,
            token,
            link.signed_in,
            status=409,
            error=exists.detail,
            account_exists=True,
        )
    except ApiError as refused:
        if refused.status != 404:  # busy hashing (429): the error page says so
            raise
        raise _gone(request) from refused  # used or removed since the page was opened
    return PASSWORD_FORM.signed_in(services, new.token, "/settings")


@router.post("/invitations/{token}/accept")
async def accept_form(
    request: Request, link: OpenedLink, conn: Tx, now: Now, token: str
) -> Response:
    signed_in = link.signed_in
    if signed_in is None:
        return redirect(f"/login?next=/invitations/{token}")
    await checked_form(request, signed_in.csrf_token)
    try:
        await orgs.accept(conn, token, signed_in.user_id, now)
    except ApiError as refused:
        if refused.status != 404:  # a member already: the error page says so
            raise
        raise _gone(request) from refused  # someone else's link, or used meanwhile
    return redirect("/settings")
