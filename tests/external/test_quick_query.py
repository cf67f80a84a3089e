"""hangar.external.query: the public API's query read directly gives each operation exactly
what FastAPI's solver would, and steps aside whenever the solver would refuse."""

from __future__ import annotations

import itertools
from typing import Annotated
from urllib.parse import urlencode

import pytest
from fastapi import APIRouter, Depends, Header, Query
from fastapi.dependencies.utils import request_params_to_args
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from hangar.external.query import QuickQuery
from hangar.external.routes import ROUTERS

Names = Annotated[list[str], Query()]
MaybeNames = Annotated[list[str] | None, Query()]
ROUTES = [route for router in ROUTERS for route in router.routes if isinstance(route, APIRoute)]

# Values every parameter is tried with: valid and invalid for each kind the API declares
# (digits with bounds, free text, enumerations, strict booleans, date-times with offsets,
# repeatable event names).
VALUES = [
    "",
    "0",
    "1",
    "100",
    "500",
    "501",
    "0050",
    "+5",
    " 5",
    "5_0",
    "\u0665",  # an Arabic-Indic five
    "1e2",
    "abc",
    "true",
    "false",
    "True",
    "1",
    "confirmed",
    "no_show",
    "open",
    "in_progress",
    "completed",
    "reservation.created",
    "mel.expired",
    "test.ping",
    "2026-05-01T09:00:00Z",
    "2026-05-01T09:00:00+02:00",
    "2026-05-01T09:00:00 02:00",
    "2026-05-01T09:00:00",
    "2026-05-01",
    "9999-12-31T23:59:59-01:00",
    "x" * 300,
]


def _request(query: str) -> Request:
    return Request(
        {
            "type": "http",
            "method": "GET",
            "path": "/",
            "query_string": query.encode(),
            "headers": [],
        }
    )


def _queries(route: APIRoute) -> list[str]:
    names = [field.alias for field in route.dependant.query_params]
    queries = [""]
    for name in names:
        queries += [urlencode({name: value}) for value in VALUES]
        # Repeated: a list takes every value, anything else the last one.
        queries += [f"{name}=1&{name}=500", f"{name}=abc&{name}=1", f"{name}=&{name}=open"]
    for first, second in itertools.combinations(names, 2):
        queries += [
            urlencode({first: a, second: b}) for a, b in zip(VALUES, VALUES[5:], strict=False)
        ]
    queries += ["unknown=1", "limit", "&&", "=1"]
    return queries


@pytest.mark.parametrize("route", ROUTES, ids=[route.path for route in ROUTES])
def test_every_operation_reads_its_query_directly(route: APIRoute) -> None:
    assert QuickQuery.of(route.dependant) is not None


@pytest.mark.parametrize("route", ROUTES, ids=[route.path for route in ROUTES])
def test_the_same_arguments_as_fastapis_solver_or_none_where_it_refuses(route: APIRoute) -> None:
    quick = QuickQuery.of(route.dependant)
    assert quick is not None
    read = refused = 0
    for query in _queries(route):
        request = _request(query)
        solved, errors = request_params_to_args(route.dependant.query_params, request.query_params)
        arguments = quick.arguments(request)
        if errors:
            assert arguments is None, query
            refused += 1
        else:
            assert arguments is not None, query
            assert arguments.pop(quick.request_name) is request
            assert arguments == solved, query
            assert [type(v) for v in arguments.values()] == [type(v) for v in solved.values()]
            read += 1
    assert read > 0
    if route.name == "list_events":  # its limit and times are refused by both
        assert refused > 0


def test_anything_more_than_a_plain_query_is_left_to_fastapi() -> None:
    async def needs_header(request: Request, x_thing: str = Header()) -> Response:
        return Response()

    async def needs_dependency(request: Request, value: int = Depends(lambda: 1)) -> Response:
        return Response()

    def not_a_coroutine(request: Request, limit: int = 5) -> Response:
        return Response()

    async def mutable_default(request: Request, names: Names = ["a"]) -> Response:  # noqa: B006
        return Response()

    async def plain(request: Request, limit: int = 5, names: MaybeNames = None) -> Response:
        return Response()

    local = APIRouter()
    for endpoint in (needs_header, needs_dependency, not_a_coroutine, mutable_default, plain):
        local.add_api_route("/" + endpoint.__name__, endpoint)
    found = {
        route.path: QuickQuery.of(route.dependant) is not None
        for route in local.routes
        if isinstance(route, APIRoute)
    }
    assert found == {
        "/needs_header": False,
        "/needs_dependency": False,
        "/not_a_coroutine": False,
        "/mutable_default": False,
        "/plain": True,
    }
