"""The public API's query parameters, read without FastAPI's dependency solver when they are
plainly valid.

Each operation declares its parameters in its signature (they make the OpenAPI document), and
FastAPI's solver reads them. For these operations (GETs whose only inputs are the request and
its query) most of the solver's cost was its general machinery around each parameter, not the
validation itself: on an events poll that finds nothing new, about a tenth of the server's
time (bench/RESULTS.md, 2026-11-27, afternoon), and 12-25% of its CPU time with FastAPI
0.165 (2026-11-29; `python -m bench.query_ab` measures it again). `QuickQuery` does what the
solver does for a query parameter (the key's last value, or every value of a list; the
declared default when absent; the field's own pydantic validation) and nothing else. When
any value fails, it steps aside and the solver runs as before, so every refusal (422 and its
`errors`) is FastAPI's own, word for word. tests/external/test_quick_query.py holds the two
to the same values for every operation.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

# The solver's own helpers, from FastAPI's private module: this is the one module of hangar
# that imports it (pyproject.toml's contract "Framework internals"). tests/test_framework_pins.py
# holds FastAPI to the tested version and the solver's code that this follows to what it was,
# and tests/external/test_quick_query.py compares every operation with the solver: an upgrade
# that changes either is caught there.
from fastapi._compat import ModelField, field_annotation_is_sequence
from fastapi.dependencies.models import Dependant
from fastapi.params import Query
from pydantic import BaseModel, Json
from starlette.requests import Request
from starlette.responses import Response

# Defaults handed out as they are, with no copy: none of these can be changed by the callee.
_IMMUTABLE = (type(None), bool, int, float, str)


@dataclass(frozen=True)
class _Param:
    field: ModelField
    name: str  # the endpoint's argument
    key: str  # the query's
    many: bool  # every value (a list), not the last one
    loc: tuple[str, str]  # where a refusal would point


@dataclass(frozen=True)
class QuickQuery:
    """Calls an operation with its query read directly (see the module's docstring)."""

    call: Callable[..., Awaitable[Response]]
    request_name: str
    params: tuple[_Param, ...]

    @classmethod
    def of(cls, dependant: Dependant) -> QuickQuery | None:
        """For an operation whose inputs are its request and plain query parameters; None
        for any other (anything else FastAPI would inject, a parameter model, a JSON-encoded
        value, an alias of another kind), which the solver keeps reading."""
        call = dependant.call
        if (
            call is None
            or not inspect.iscoroutinefunction(call)
            or dependant.request_param_name is None
            or dependant.path_params
            or dependant.header_params
            or dependant.cookie_params
            or dependant.body_params
            or dependant.dependencies
            or dependant.websocket_param_name
            or dependant.http_connection_param_name
            or dependant.response_param_name
            or dependant.background_tasks_param_name
            or dependant.security_scopes_param_name
        ):
            return None
        params = []
        for field in dependant.query_params:
            info = field.field_info
            annotation = info.annotation
            if (
                not isinstance(info, Query)
                or info.validation_alias is not None
                or field.alias != field.name
                or any(type(item) is Json for item in info.metadata)
                or (inspect.isclass(annotation) and issubclass(annotation, BaseModel))
                or (not info.is_required() and not isinstance(field.default, _IMMUTABLE))
                or info.validate_default
            ):
                return None
            many = field_annotation_is_sequence(annotation)
            params.append(_Param(field, field.name, field.alias, many, ("query", field.alias)))
        return cls(call, dependant.request_param_name, tuple(params))

    def arguments(self, request: Request) -> dict[str, Any] | None:
        """The operation's arguments, or None when a value is missing or invalid (the
        solver then answers, with its own errors)."""
        query = request.query_params
        values: dict[str, Any] = {self.request_name: request}
        for param in self.params:
            raw: Any = query.getlist(param.key) if param.many else query.get(param.key)
            if raw is None or (param.many and not raw):
                if param.field.field_info.is_required():
                    return None
                values[param.name] = param.field.default
                continue
            value, errors = param.field.validate(raw, values, loc=param.loc)
            if errors:
                return None
            values[param.name] = value
        return values
