"""Turning the API's request models' validation errors into plain words beside a field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hangar.kit.errors import ApiError

Model = TypeVar("Model", bound=BaseModel)

# The management API's error codes, mapped to the form field they are about.
FIELD_OF_CODE = {
    "WEBHOOK_URL_HTTPS_REQUIRED": "url",
    "WEBHOOK_URL_HOST_REQUIRED": "url",
    "WEBHOOK_URL_PARSE_FAILED": "url",
    "WEBHOOK_URL_DNS_FAILED": "url",
    "WEBHOOK_URL_PRIVATE_IP": "url",
    "UNKNOWN_EVENT": "events",
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


def parse(model: type[Model], data: dict[str, Any]) -> tuple[Model | None, dict[str, str]]:
    """The model, or the first error per field in words a person reads."""
    try:
        return model.model_validate(data), {}
    except ValidationError as exc:
        errors: dict[str, str] = {}
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "form"
            errors.setdefault(field, _PLAIN.get(err["type"], str(err["msg"])))
        return None, errors


def field_error(exc: ApiError, default: str = "form") -> dict[str, str]:
    """A command's refusal placed beside the field it is about; its detail is already prose."""
    return {FIELD_OF_CODE.get(exc.code, default): exc.detail}
