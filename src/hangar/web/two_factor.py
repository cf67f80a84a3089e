"""/settings/two-factor: a person's own two-factor sign-in (set it up, see how many recovery
codes are left, turn it off), and /settings/{org_id}/security: an organization's "require
two-factor sign-in for admins". The actions are accounts/second_factor.py's and
orgs/service.py's, as the session API's.

Every form answers with a redirect (303), so a reload never repeats it. Turning it on
redirects to the recovery codes' one-time view, which shows them once: they are carried
there sealed in a short-lived cookie (web.shown_once), never in a URL or a log line, and a
reload of the view shows none.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.accounts import second_factor
from hangar.http.routing import Now, ServicesDep, Tx
from hangar.kit.errors import ApiError
from hangar.orgs import service as orgs
from hangar.web import shown_once
from hangar.web.access import AdminPage, ViewerPage, checked_form, text
from hangar.web.pages import PageRoute, redirect, render

router = APIRouter(route_class=PageRoute)
PAGE = "/settings/two-factor"
CODES = f"{PAGE}/recovery-codes"


def _page(
    request: Request, viewer: ViewerPage, status: second_factor.Status, **context: object
) -> Response:
    code = 422 if context.get("error") or context.get("off_error") else 200
    return render(
        request,
        "two_factor.html",
        code,
        viewer=viewer,
        csrf_token=viewer.session.csrf_token,
        status=status,
        **context,
    )


@router.get(PAGE)
async def two_factor_page(request: Request, services: ServicesDep, viewer: ViewerPage) -> Response:
    done = request.query_params.get("done")
    said = {"off": "Two-factor sign-in is off."}.get(done or "", "")
    return _page(request, viewer, await second_factor.status(services, viewer.session), said=said)


@router.post(f"{PAGE}/setup")
async def set_up(request: Request, services: ServicesDep, viewer: ViewerPage) -> Response:
    await checked_form(request, viewer.session.csrf_token)
    try:
        await second_factor.enrol(services, viewer.session)
    except ApiError as refused:
        if refused.status != 409:
            raise
    return redirect(PAGE)  # the page shows the code to scan while it waits for the first code


@router.post(f"{PAGE}/confirm")
async def confirm(request: Request, services: ServicesDep, viewer: ViewerPage) -> Response:
    form = await checked_form(request, viewer.session.csrf_token)
    code = text(form, "code").strip().replace(" ", "")
    try:
        codes = await second_factor.confirm_enrolment(services, viewer.session, code[:20])
    except ApiError as refused:
        error = (
            f"{refused.detail}."
            if refused.status == 429
            else ("That code is not right: enter the 6 digits the app shows now.")
        )
        status = await second_factor.status(services, viewer.session)
        page = _page(request, viewer, status, error=error)
        page.headers.update(refused.headers)
        return page
    return shown_once.hand_over(services, viewer.session, CODES, {"codes": codes})


@router.get(CODES)
async def recovery_codes(request: Request, services: ServicesDep, viewer: ViewerPage) -> Response:
    """The recovery codes' one-time view: the codes on the first visit after turning
    two-factor sign-in on, by this session; afterwards that they were shown once."""
    held = shown_once.take(request, services, viewer.session, CODES) or {}
    codes = held.get("codes")
    shown = codes if isinstance(codes, list) and all(isinstance(c, str) for c in codes) else []
    page = render(
        request,
        "two_factor_codes.html",
        viewer=viewer,
        csrf_token=viewer.session.csrf_token,
        recovery_codes=shown,
    )
    return shown_once.forget(page, services, CODES)


@router.post(f"{PAGE}/off")
async def turn_off(request: Request, services: ServicesDep, viewer: ViewerPage) -> Response:
    form = await checked_form(request, viewer.session.csrf_token)
    given = text(form, "code").strip()[:40]
    try:
        await second_factor.turn_off(services, viewer.session, **second_factor.typed_code(given))
    except ApiError as refused:
        error = f"{refused.detail}." if refused.status == 429 else "That code is not right."
        status = await second_factor.status(services, viewer.session)
        page = _page(request, viewer, status, off_error=error)
        page.headers.update(refused.headers)
        return page
    return redirect(f"{PAGE}?done=off")


@router.get("/settings/{org_id}/security")
async def security_page(request: Request, admin: AdminPage, conn: Tx) -> Response:
    found = await orgs.security(conn, admin.org_id)
    return render(request, "org_security.html", **admin.page(section="security", found=found))


@router.post("/settings/{org_id}/security")
async def security_form(request: Request, admin: AdminPage, conn: Tx, now: Now) -> Response:
    form = await checked_form(request, admin.csrf_token)
    wanted = text(form, "require_two_factor") == "on"
    try:
        await orgs.require_two_factor_of(conn, admin.who, admin.org_id, wanted, now)
    except ApiError as refused:
        found = await orgs.security(conn, admin.org_id)
        context = admin.page(section="security", found=found, error=refused.detail)
        return render(request, "org_security.html", refused.status, **context)
    return redirect(f"/settings/{admin.org_id}/security")
