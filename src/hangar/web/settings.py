"""/settings: where a signed-in user lands; it picks the organization to manage."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.web.access import ViewerPage, refusal
from hangar.web.pages import PageRoute, redirect, render

router = APIRouter(route_class=PageRoute)


@router.get("/settings")
async def settings_home(request: Request, viewer: ViewerPage) -> Response:
    orgs = viewer.admin_orgs
    if not orgs:
        return refusal(request, viewer)
    if len(orgs) == 1:
        return redirect(f"/settings/{orgs[0]['org_id']}/keys")
    return render(
        request, "orgs.html", viewer=viewer, orgs=orgs, csrf_token=viewer.session.csrf_token
    )
