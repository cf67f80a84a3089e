"""Rendering, security headers and the page route class every screen uses.

A page handler either returns a response or raises `PageExit` (a redirect to sign in, a
refusal); an `ApiError` from a command function becomes an HTML error page rather than the
JSON body the API gives. Every response, error pages included, gets the security headers.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import datetime
from importlib.resources import files
from typing import Any

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.responses import HTMLResponse, RedirectResponse, Response

from hangar.auth import passwords
from hangar.kit.errors import ApiError, NotFound

# Templates, static files and snippets are package data: found through the installed
# package (importlib.resources), so a wheel serves what a checkout serves.
PACKAGE = files("hangar.web")

# No inline script or style anywhere: everything comes from /static on this origin.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}

templates = Environment(
    loader=PackageLoader("hangar.web", "templates"),
    autoescape=select_autoescape(["html", "xml"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(value: datetime | None) -> str:
    return "never" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


templates.filters["when"] = _when
# The one password rule (hangar.auth.passwords), for the forms' minlength and maxlength.
templates.globals["password_min"] = passwords.MIN_LENGTH
templates.globals["password_max"] = passwords.MAX_LENGTH


class PageExit(Exception):
    """Stop handling a page and answer this instead."""

    def __init__(self, response: Response) -> None:
        super().__init__()
        self.response = response


def render(request: Request, template: str, status: int = 200, /, **context: Any) -> HTMLResponse:
    html = templates.get_template(template).render(request=request, **context)
    return HTMLResponse(html, status_code=status)


def redirect(url: str) -> RedirectResponse:
    # 303: the browser follows with GET, so a reload never repeats a POST.
    return RedirectResponse(url, status_code=303)


def error_page(request: Request, status: int, title: str, detail: str) -> HTMLResponse:
    return render(request, "error.html", status, title=title, detail=detail)


_TITLES = {
    403: "Not allowed",
    404: "Not found",
    409: "Not possible now",
    429: "Slow down",
}


class PageRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                response = await handler(request)
            except PageExit as exit_:
                response = exit_.response
            except ApiError as exc:
                title = _TITLES.get(exc.status, "Something went wrong")
                response = error_page(request, exc.status, title, exc.detail)
            response.headers.update(SECURITY_HEADERS)
            # Pages hold per-user data and sometimes a secret shown once: never cache them.
            response.headers.setdefault("Cache-Control", "no-store")
            return response

        return page


router = APIRouter(route_class=PageRoute)

_STATIC = {
    "style.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
}


@router.get("/static/{name}")
async def static(name: str) -> Response:
    # A fixed list, not a directory: nothing else under the package can be fetched.
    media_type = _STATIC.get(name)
    if media_type is None:
        raise NotFound("file")
    # Two small files: read on each request, as the templates are checked on each render.
    response = Response((PACKAGE / "static" / name).read_bytes(), media_type=media_type)
    response.headers["Cache-Control"] = "public, max-age=300"
    return response
