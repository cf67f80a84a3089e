"""Turning the API's request models' validation errors into plain words beside a field."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hangar.kit.errors import ApiError

Model = TypeVar("Model", bound=BaseModel)
Result = TypeVar("Result")

# The management API's error codes, mapped to the form field they are about.
FIELD_OF_CODE = {
    "WEBHOOK_URL_HTTPS_REQUIRED": "url",
    "WEBHOOK_URL_HOST_REQUIRED": "url",
    "WEBHOOK_URL_PARSE_FAILED": "url",
    "WEBHOOK_URL_DNS_FAILED": "url",
    "WEBHOOK_URL_PRIVATE_IP": "url",
    "UNKNOWN_EVENT": "events",
    # About the organization, not a field: said above the form, as its other refusals are.
    "SUBSCRIPTION_LIMIT": "form",
    "API_KEY_SCOPES_REQUIRED": "scopes",
    "UNKNOWN_SCOPE": "scopes",
}

_PLAIN = {
    "string_too_short": "This cannot be empty.",
    "string_too_long": "This is too long.",
    "too_long": "Too many are chosen.",
    "int_parsing": "Enter a whole number.",
    "greater_than_equal": "This is too small.",
    "less_than_equal": "This is too large.",
    "missing": "This is required.",
}


def whole_number(text: str, default: int) -> int | str:
    """A form's number field, for a strict request model: digits become the number and an
    empty field the default; anything else stays text, which the model refuses."""
    text = text.strip()
    if text == "":
        return default
    return int(text) if text.isascii() and text.isdigit() else text


def grace_hours(
    text: str, model: type[Model], default: int, most: int
) -> tuple[Model | None, str, dict[str, str]]:
    """A rotate form's grace field (keys and webhook secrets alike): the request model, the
    text as typed (to show it again) and, when refused, the field's one error."""
    grace = text.strip()
    body, _ = parse(model, {"grace_hours": whole_number(grace, default)})
    if body is not None:
        return body, grace, {}
    return None, grace, {"grace_hours": f"Choose a whole number of hours from 0 to {most}."}


def parse(model: type[Model], data: Mapping[str, Any]) -> tuple[Model | None, dict[str, str]]:
    """The model, or the first error per field in words a person reads."""
    try:
        return model.model_validate(data), {}
    except ValidationError as exc:
        errors: dict[str, str] = {}
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "form"
            errors.setdefault(field, _PLAIN.get(err["type"], str(err["msg"])))
        return None, errors


async def attempt(
    action: Awaitable[Result], default: str = "form"
) -> tuple[Result | None, dict[str, str]]:
    """The action's result, or its 422 placed beside the field it is about (`default` when
    its code names none; the detail is already prose): the form is shown again. Any other
    refusal propagates, and the page route answers it with its error page.

    The actions refuse a 422 before they write, so the request's transaction commits nothing.
    """
    try:
        return await action, {}
    except ApiError as exc:
        if exc.status != 422:
            raise
        return None, {FIELD_OF_CODE.get(exc.code, default): exc.detail}


async def submit(
    model: type[Model],
    data: Mapping[str, Any],
    action: Callable[[Model], Awaitable[Result]],
    default: str = "form",
) -> tuple[Result | None, dict[str, str]]:
    """A form's whole journey: its request model (`parse`), then the action (`attempt`). The
    result, or the words to show beside each field."""
    body, errors = parse(model, data)
    if body is None:
        return None, errors
    return await attempt(action(body), default)
