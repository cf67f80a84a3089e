"""/docs: the integrator documentation, public.

The API reference is rendered on the server from the same OpenAPI description that
/api/v1/external/openapi.json serves, so the page lists exactly what is deployed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.responses import Response

from hangar.external.openapi import build_openapi
from hangar.kit.schemas import REQUIRED_SCOPE
from hangar.kit.scopes import SCOPES
from hangar.web.events import EVENTS
from hangar.web.pages import PACKAGE, PageRoute, render
from hangar.web.response_fields import Body, bodies, type_of

router = APIRouter(route_class=PageRoute)

SNIPPETS = PACKAGE / "snippets"
# The document's descriptions are CommonMark (OpenAPI's rule).
_md = MarkdownIt("commonmark", {"html": False})


def _html(markdown: str, *, inline: bool = False) -> Markup:
    # Safe to mark up: with "html" off, markdown-it escapes all but the markup it makes itself.
    return Markup(_md.renderInline(markdown) if inline else _md.render(markdown))  # noqa: S704


def _inline(markdown: str) -> Markup:
    return _html(markdown, inline=True)


@dataclass(frozen=True)
class Parameter:
    name: str
    where: str
    required: bool
    type: str
    notes: Markup


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str
    summary: str
    description: Markup
    scope: str
    parameters: list[Parameter]
    responses: list[tuple[str, Markup]]
    bodies: list[Body]  # the fields of the 200 answer's body


def _notes(param: dict[str, Any]) -> Markup:
    schema = param.get("schema", {})
    options = [schema, *schema.get("anyOf", [])]
    # A repeatable parameter (an array) says what each of its values may be.
    each = [o["items"] for o in options if o.get("type") == "array" and "items" in o]
    description = param.get("description") or schema.get("description") or ""
    parts: list[str] = [_inline(description)] if description else []
    labelled = [(option, "one of ") for option in options] + [(o, "each one of ") for o in each]
    for option, one_of in labelled:
        if "enum" in option:
            parts.append(one_of + ", ".join(str(v) for v in option["enum"]))
        if "minimum" in option or "maximum" in option:
            parts.append(f"from {option.get('minimum', '…')} to {option.get('maximum', '…')}")
    if "default" in schema:
        parts.append(f"default {schema['default']}")
    # Markup's join escapes the plain parts and keeps the rendered description's markup.
    return Markup("; ").join(parts)


def operations(doc: dict[str, Any]) -> list[Operation]:
    found = []
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            found.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    operation_id=op.get("operationId", f"{method}-{path}"),
                    summary=op.get("summary", ""),
                    description=_html(op.get("description", "")),
                    scope=op.get(REQUIRED_SCOPE, ""),
                    parameters=[
                        Parameter(
                            name=p["name"],
                            where=p["in"],
                            required=bool(p.get("required")),
                            type=type_of(p.get("schema", {})),
                            notes=_notes(p),
                        )
                        for p in op.get("parameters", [])
                    ],
                    responses=[
                        (status, _inline(r.get("description", "")))
                        for status, r in op["responses"].items()
                    ],
                    bodies=bodies(
                        doc["components"]["schemas"],
                        op["responses"]["200"],
                        op.get(REQUIRED_SCOPE, ""),
                        _inline,
                    ),
                )
            )
    return found


@dataclass(frozen=True)
class Reference:
    doc: dict[str, Any]
    operations: list[Operation]


def _reference(app: FastAPI) -> Reference:
    # The routes do not change while the app runs: build the description, and the page's
    # reading of it, once per app.
    cached: Reference | None = getattr(app.state, "web_reference", None)
    if cached is None:
        doc = build_openapi(app)
        cached = Reference(doc, operations(doc))
        app.state.web_reference = cached
    return cached


@functools.cache
def _snippet(name: str) -> str:
    # Package data: read once per process, not on every page view.
    return (SNIPPETS / name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Receiver:
    anchor: str
    title: str
    file: str

    @property
    def snippet(self) -> str:
        return _snippet(self.file)


# The receivers "Verifying signatures" shows, each run under its own runtime against signed
# deliveries by tests/web/test_receiver_snippets.py.
RECEIVERS = (
    Receiver("receiver-python", "Python", "receiver.py"),
    Receiver("receiver-node", "Node.js", "receiver.js"),
    Receiver("receiver-ruby", "Ruby", "receiver.rb"),
    Receiver("receiver-php", "PHP", "receiver.php"),
    Receiver("receiver-go", "Go", "receiver.go"),
)


@router.get("/docs")
async def docs(request: Request) -> Response:
    reference = _reference(request.app)
    doc = reference.doc
    return render(
        request,
        "docs.html",
        info=doc["info"],
        base_url=doc["servers"][0]["url"].rstrip("/"),
        operations=reference.operations,
        scopes=SCOPES,
        events=EVENTS,
        receivers=RECEIVERS,
        client_snippet=_snippet("client.py"),
        poll_python_snippet=_snippet("poll_events.py"),
        poll_node_snippet=_snippet("poll_events.js"),
    )
