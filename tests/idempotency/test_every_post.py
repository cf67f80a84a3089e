"""Every POST under /api/orgs/{org_id} takes an Idempotency-Key: each is a JsonRoute (which
settles the key) acting through hangar.http.access's `acting` (which claims it), solved
before the request's transaction (`Tx`) begins, so that the claim commits first."""

from __future__ import annotations

from fastapi.routing import APIRoute

from hangar.app import create_app
from hangar.http.routing import ORG_PREFIX, JsonRoute, transaction
from hangar.kit.container import Services


def org_posts(services: Services) -> list[APIRoute]:
    app = create_app(services)
    return [
        route
        for route in app.routes
        if isinstance(route, APIRoute)
        and route.path.startswith(ORG_PREFIX)
        and "POST" in (route.methods or ())
    ]


def test_every_post_under_an_organization_claims_before_its_transaction(
    services: Services,
) -> None:
    routes = org_posts(services)
    assert len(routes) >= 20  # keys, webhooks, members and the product's actions
    wrong = []
    for route in routes:
        calls = [d.call for d in route.dependant.dependencies]
        acting = [
            n for n, c in enumerate(calls) if getattr(c, "__qualname__", "").startswith("acting.")
        ]
        opened = [n for n, c in enumerate(calls) if c is transaction]
        if not isinstance(route, JsonRoute) or not acting or (opened and opened[0] < acting[0]):
            wrong.append(route.path)
    assert wrong == []
