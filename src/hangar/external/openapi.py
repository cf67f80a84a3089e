"""The OpenAPI 3.1.0 description of the public API, built once from the live routes."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from hangar import __version__
from hangar.external.paths import PREFIX
from hangar.external.tags import TAGS
from hangar.external.webhooks_doc import add_webhooks
from hangar.kit.scopes import SCOPES

API_VERSION = __version__

_DESCRIPTION = (
    "Read-only access to one organization's reservations, fleet, squawks, members, "
    "maintenance log entries and work orders. Every key belongs to one organization and "
    "carries scopes; each operation names the scope it needs.\n\n"
    "Limits: 60 requests per calendar minute and 1000 per calendar hour per key; a 429 "
    "`RATE_LIMITED` is the only signal (no quota headers). Errors are `{detail, code}`; "
    "branch on `code`. Clients must ignore unknown keys.\n\nScopes:\n\n"
    + "\n".join(f"- `{scope}`: {text}" for scope, text in SCOPES.items())
)


def build_openapi(app: FastAPI) -> dict[str, Any]:
    """The document as FastAPI builds it (JSON, typed as FastAPI types it), narrowed to the
    public API and given its servers, contact, license, tags and security schemes."""
    public_url = app.state.services.settings.public_url
    doc = get_openapi(
        title="hangar external API",
        version=API_VERSION,
        openapi_version="3.1.0",
        description=_DESCRIPTION,
        routes=app.routes,
        tags=TAGS,
        # SECURITY.md: questions and reports go to the operators of the deployment, whose
        # integrator documentation is at /docs.
        contact={"name": "The operators of this hangar deployment", "url": f"{public_url}/docs"},
        # The repository states no license: the service is proprietary. SPDX has no
        # identifier for that; `LicenseRef-` is SPDX's form for a license not on its list.
        license_info={"name": "Proprietary", "identifier": "LicenseRef-Proprietary"},
    )
    # Only the public API is described; sessions, management and pages are not part of it.
    doc["paths"] = {path: ops for path, ops in doc["paths"].items() if path.startswith(PREFIX)}
    doc["servers"] = [{"url": public_url}]
    doc.setdefault("components", {})["securitySchemes"] = {
        "bearerAuth": {
            "type": "http",
            "scheme": "bearer",
            "description": "Authorization: Bearer svc_pk_… (an API key of the organization)",
        },
        "calendarToken": {
            "type": "apiKey",
            "in": "query",
            "name": "token",
            "description": "The full API key, for calendar clients that cannot send headers",
        },
    }
    feed = doc["paths"][f"{PREFIX}/reservations.ics"]["get"]
    for param in feed.get("parameters", []):
        if param["name"] == "token":
            param["required"] = True
            param["schema"] = {"type": "string"}
    # Not JSON: the route's description stays, its content is the calendar's.
    feed["responses"]["200"]["content"] = {"text/calendar": {"schema": {"type": "string"}}}
    # What hangar sends: each event's body and headers, for receivers' generated types.
    add_webhooks(doc)
    return doc
