"""JSON out of the public API: `dumps` (hangar.kit.encoding) straight into a response."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from hangar.kit.encoding import dumps


def json_response(content: Any, status: int = 200) -> Response:
    return Response(dumps(content), status_code=status, media_type="application/json")
