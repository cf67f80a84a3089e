"""/login and /logout: the same server-side session (and cookie) as POST /api/session.

The sign-in form has no session yet to hold a CSRF token, so it carries a double-submit
token (`DoubleSubmit`): another site cannot sign a victim into the attacker's account.
Every form answers a success with a redirect (303): the right password of an account with
two-factor sign-in leads to the code's page, /login/two-factor, so a reload there asks for
the code again and never sends the password again.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.accounts.second_factor import typed_code, verify_second_factor
from hangar.accounts.service.sign_in import Challenged, sign_in_or_refuse, sign_out
from hangar.auth import passwords, sessions
from hangar.auth.challenges import CHALLENGE_COOKIE
from hangar.http.access import set_challenge_cookie
from hangar.http.routing import ServicesDep, Tx, client_of
from hangar.kit.container import Services
from hangar.kit.errors import ApiError
from hangar.web.access import DoubleSubmit, MaybeViewer, checked_form, text
from hangar.web.pages import PageRoute, redirect, render

router = APIRouter(route_class=PageRoute)

LOGIN_CSRF_COOKIE = "hangar_login_csrf"
LOGIN_FORM = DoubleSubmit(LOGIN_CSRF_COOKIE, "/login")
CODE_PAGE = "/login/two-factor"


# An invitation page: its token is URL-safe base64, so nothing else fits this path.
_INVITATION = re.compile(r"/invitations/[A-Za-z0-9_-]{1,100}")


def _next(target: str) -> str:
    # Only our own settings pages and invitation pages: never an absolute or
    # protocol-relative URL.
    if target.startswith("/settings") and "//" not in target and "\\" not in target:
        return target
    if _INVITATION.fullmatch(target):
        return target
    return "/settings"


def _form(
    request: Request, services: Services, *, status: int = 200, error: str = "", email: str = ""
) -> Response:
    token = LOGIN_FORM.new_token()
    response = render(
        request,
        "login.html",
        status,
        login_csrf=token,
        error=error,
        email=email,
        next=_next(request.query_params.get("next", "")),
    )
    LOGIN_FORM.issue(services, response, token)
    return response


@router.get("/login")
async def login_form(request: Request, services: ServicesDep) -> Response:
    return _form(request, services)


@router.post("/login")
async def login(request: Request, services: ServicesDep) -> Response:
    form = await request.form(max_fields=10, max_files=0)
    if not LOGIN_FORM.holds(request, form):
        return _form(
            request,
            services,
            status=403,
            error="The sign-in form had expired. Please enter your email and password again.",
        )
    email = text(form, "email").strip().lower()
    password = text(form, "password")
    if not email or not password or len(email) > 320 or len(password) > passwords.MAX_LENGTH:
        error = "Enter your email and password."
        return _form(request, services, status=422, error=error, email=email)
    try:
        # The same function, and so the same budgets, as POST /api/session.
        new = await sign_in_or_refuse(services, email, password, client_of(request))
    except ApiError as refusal:
        # A 429 says which budget is spent, or that hashing is busy.
        error = f"{refusal.detail}." if refusal.status == 429 else "Wrong email or password."
        page = _form(request, services, status=refusal.status, error=error, email=email)
        page.headers.update(refusal.headers)
        return page
    target = _next(text(form, "next"))
    if isinstance(new, Challenged):
        return to_code_form(services, new.token, target)
    return LOGIN_FORM.signed_in(services, new.token, target)


def to_code_form(services: Services, challenge: str, target: str) -> Response:
    """The answer to a password that is right for an account with two-factor sign-in: to
    the code's page (GET), with the waiting sign-in's cookie. A redirect, so that a reload
    asks for the code again rather than sending the password again (issue 42)."""
    response = redirect(f"{CODE_PAGE}?{urlencode({'next': target})}")
    set_challenge_cookie(response, services, challenge)
    return response


@router.get(CODE_PAGE)
async def code_page(request: Request, services: ServicesDep) -> Response:
    """The second step of signing in, while a sign-in waits for its code; without one (none
    begun, or signed out since) the password comes first."""
    target = _next(request.query_params.get("next", ""))
    if not request.cookies.get(CHALLENGE_COOKIE):
        return redirect("/login" if target == "/settings" else f"/login?next={quote(target)}")
    return code_form(request, services, target)


def code_form(
    request: Request, services: Services, target: str, *, status: int = 200, error: str = ""
) -> Response:
    """The second step of signing in: the code from the app, or a recovery code."""
    token = LOGIN_FORM.new_token()
    response = render(
        request, "login_code.html", status, login_csrf=token, error=error, next=target
    )
    LOGIN_FORM.issue(services, response, token)
    return response


@router.post(CODE_PAGE)
async def login_code(request: Request, services: ServicesDep) -> Response:
    form = await request.form(max_fields=10, max_files=0)
    target = _next(text(form, "next"))
    if not LOGIN_FORM.holds(request, form):
        error = "The form had expired. Please enter your code again."
        return code_form(request, services, target, status=403, error=error)
    given = text(form, "code").strip()
    if not given or len(given) > 40:
        return code_form(request, services, target, status=422, error="Enter a code.")
    try:
        new = await verify_second_factor(
            services,
            request.cookies.get(CHALLENGE_COOKIE),
            client_of(request),
            **typed_code(given),
        )
    except ApiError as refusal:
        if refusal.code == "UNAUTHORIZED":  # no challenge, or it ran out: the password again
            error = "Your sign-in took too long. Please enter your email and password again."
            return _form(request, services, status=401, error=error)
        error = f"{refusal.detail}." if refusal.status == 429 else "That code is not right."
        page = code_form(request, services, target, status=refusal.status, error=error)
        page.headers.update(refusal.headers)
        return page
    response = LOGIN_FORM.signed_in(services, new.token, target)
    response.delete_cookie(CHALLENGE_COOKIE, path="/")
    return response


@router.post("/logout")
async def logout(request: Request, viewer: MaybeViewer, conn: Tx) -> Response:
    if viewer is None:
        return redirect("/login")
    form = await checked_form(request, viewer.session.csrf_token)
    await sign_out(conn, viewer.session.session_id)
    # Signing out to sign in as someone else (an invitation page offers it) comes back there.
    target = _next(text(form, "next"))
    response = redirect("/login" if target == "/settings" else f"/login?next={quote(target)}")
    response.delete_cookie(sessions.COOKIE, path="/")
    return response
