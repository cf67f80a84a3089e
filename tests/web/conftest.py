"""Helpers for the page tests: reading hidden fields out of HTML, signing in through /login."""

from __future__ import annotations

import re

import httpx

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_in(html: str) -> str:
    match = CSRF.search(html)
    assert match is not None, "no CSRF field on the page"
    return match.group(1)


async def page_csrf(client: httpx.AsyncClient, path: str) -> str:
    """The CSRF token a signed-in user's form on `path` carries."""
    response = await client.get(path)
    assert response.status_code == 200, response.text
    return csrf_in(response.text)


async def sign_in_with_form(client: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    form = await client.get("/login")
    return await client.post(
        "/login",
        data={"csrf_token": csrf_in(form.text), "email": email, "password": password},
    )
