"""GET /docs/events.json and /docs/events/{event}.schema.json: the JSON Schema of each
event's delivery body (hangar.webhooks.events.event_schemas), public like the rest of /docs.

JSON, not pages: an unknown event is the API's 404 `{detail, code}`, and a schema is served
as `application/schema+json`, so validators and generators that fetch it by its `$id` get
what they expect. Each document is made once per deployment (the schemas change only with
the code) and may be cached for a while.
"""

from __future__ import annotations

import functools

import orjson
from fastapi import APIRouter
from starlette.responses import Response

from hangar.http.routing import ServicesDep
from hangar.kit.errors import NotFound
from hangar.webhooks.events import event_schemas as schemas

router = APIRouter()

SCHEMA_MEDIA_TYPE = "application/schema+json"
_CACHE = "public, max-age=300"


@functools.cache
def _index(public_url: str) -> bytes:
    return orjson.dumps(schemas.index(public_url), option=orjson.OPT_INDENT_2)


@functools.cache
def _schema(event: str, public_url: str) -> bytes:
    return orjson.dumps(schemas.event_schema(event, public_url), option=orjson.OPT_INDENT_2)


@router.get(schemas.INDEX_PATH)
async def event_index(services: ServicesDep) -> Response:
    body = _index(services.settings.public_url)
    return Response(body, media_type="application/json", headers={"Cache-Control": _CACHE})


@router.get(schemas.SCHEMA_PATH)
async def event_schema(event: str, services: ServicesDep) -> Response:
    if event not in schemas.SCHEMA_EVENTS:
        raise NotFound(detail=f"No event is named {event[:100]!r}: {schemas.INDEX_PATH} lists them")
    body = _schema(event, services.settings.public_url)
    return Response(body, media_type=SCHEMA_MEDIA_TYPE, headers={"Cache-Control": _CACHE})
