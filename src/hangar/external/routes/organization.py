"""The public API's organization: who is calling, the key's organization and the key itself."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from hangar.external import tags
from hangar.external.keyed import KeyedRoute, caller
from hangar.external.operations import ANY_KEY, operation
from hangar.external.paths import PREFIX
from hangar.http.responses import json_response
from hangar.keys.authentication import KeyLookup
from hangar.orgs import queries as member_queries
from hangar.orgs.schemas import KeyOrganization

router = APIRouter(prefix=PREFIX, route_class=KeyedRoute)


# Who is calling, answered from the key's own statement: it also reads the organization's name.
class _OrganizationRoute(KeyedRoute):
    key_lookup = KeyLookup(member_queries.org_name)


_ORGANIZATION = operation(
    "get_organization",
    tags.ORGANIZATION,
    ANY_KEY,
    KeyOrganization,
    summary="The organization of this key",
    description="Which organization the key belongs to, and the key itself: its prefix, "
    "scopes and, once rotated out, when it stops working. For a partner serving many "
    "organizations: `id` is the `X-Service-Organization` header of the organization's "
    "webhook deliveries, so one receiver can tell them apart. Not paginated: one object.",
    ok="The key's organization and the key",
)


async def get_organization(request: Request) -> Response:
    by = caller(request)
    row = by.key_row
    return json_response(
        {
            "id": by.key.org_id,
            "name": row[member_queries.ORG_NAME],
            "key": {
                "prefix": row["prefix"],
                "scopes": row["scopes"] or [],
                "expires_at": row["expires_at"],
            },
        }
    )


router.add_api_route(
    "/organization",
    get_organization,
    methods=["GET"],
    route_class_override=_OrganizationRoute,
    **_ORGANIZATION,
)
