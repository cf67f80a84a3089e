"""/password-reset/{token}: the page of the operator's recovery link (accounts.service).

GET shows whose account the link resets and a form to choose its new password; POST sets it,
ends every other session of the account, signs the holder in and goes to /settings. No
session exists yet to hold a CSRF token, so the form carries a double-submit token as /login
and the invitation's password form do (otherwise another site could make a visitor's browser
set a password of its choosing through a link it holds). Every unusable link is one 404 page.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.accounts.service import password_reset
from hangar.accounts.service.sign_in import Challenged
from hangar.http.routing import ServicesDep, client_of
from hangar.kit.container import Services
from hangar.kit.errors import ApiError
from hangar.web.access import DoubleSubmit, chosen_password
from hangar.web.login import to_code_form
from hangar.web.pages import PageExit, PageRoute, error_page, render

router = APIRouter(route_class=PageRoute)

RESET_FORM = DoubleSubmit("hangar_reset_csrf", password_reset.RESET_PATH.rstrip("/"))


def _gone(request: Request) -> PageExit:
    return PageExit(
        error_page(
            request,
            404,
            "Password reset link not valid",
            "This password reset link is not valid or has expired. Links work once and for "
            f"{int(password_reset.RESET_LIFETIME.total_seconds() // 3600)} hours, and only the "
            "newest one made for an account: ask the operator for a new one.",
        )
    )


async def _opened(request: Request, services: Services, token: str) -> password_reset.OpenReset:
    async with services.engine.connect() as conn:
        found = await password_reset.find_reset(conn, token, services.clock.now())
    if found is None:
        raise _gone(request)
    return found


def _form(
    request: Request,
    services: Services,
    found: password_reset.OpenReset,
    token: str,
    *,
    status: int = 200,
    error: str = "",
) -> Response:
    csrf = RESET_FORM.new_token()
    response = render(
        request,
        "password_reset.html",
        status,
        reset=found,
        token=token,
        form_csrf=csrf,
        error=error,
    )
    RESET_FORM.issue(services, response, csrf)
    return response


@router.get("/password-reset/{token}")
async def reset_page(request: Request, services: ServicesDep, token: str) -> Response:
    return _form(request, services, await _opened(request, services, token), token)


@router.post("/password-reset/{token}")
async def reset_form(request: Request, services: ServicesDep, token: str) -> Response:
    found = await _opened(request, services, token)
    form = await request.form(max_fields=10, max_files=0)

    def again(status: int, error: str) -> Response:
        return _form(request, services, found, token, status=status, error=error)

    if not RESET_FORM.holds(request, form):
        return again(403, "The form had expired. Please choose your password again.")
    password, problem = chosen_password(form)
    if problem is not None:
        return again(422, problem)
    try:
        new = await password_reset.choose_new_password(
            services, token, password, client_of(request)
        )
    except ApiError as refused:
        if refused.status != 404:  # busy hashing (429): the error page says so
            raise
        raise _gone(request) from refused  # used or replaced since the page was opened
    if isinstance(new, Challenged):  # the password is set; the code comes next
        response = to_code_form(services, new.token, "/settings")
        RESET_FORM.clear(response)
        return response
    return RESET_FORM.signed_in(services, new.token, "/settings")
