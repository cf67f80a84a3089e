"""The operations kit (issue 40): deploy/prometheus/alerts.yml, the Grafana dashboard and the
runbook. Every metric an alert or a panel names exists in a live /metrics (a rename that left
them behind fails here, not at 3 a.m.), every alert has its runbook section and every section
its alert, and each alert says how bad it is."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from hangar.app import create_app
from hangar.kit.container import Services
from tests.fixtures.metrics import TOKEN

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
RUNBOOK = DEPLOY / "prometheus" / "runbook.md"
DASHBOARD = DEPLOY / "grafana" / "hangar-dashboard.json"
METRIC = re.compile(r"\b(?:hangar|process)_[a-z0-9_]+")
SUFFIXES = ("_total", "_bucket", "_sum", "_count")


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


async def live_names(services: Services) -> set[str]:
    """Every family and sample name a scrape of a process that has done nothing yet shows."""
    scraped = replace(services, settings=replace(services.settings, metrics_token=TOKEN))
    transport = httpx.ASGITransport(app=create_app(scraped))
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
        answer = await c.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200, answer.text
    names = set()
    for family in text_string_to_metric_families(answer.text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
    return names


def exists(name: str, live: set[str]) -> bool:
    return name in live or any(
        name.endswith(suffix) and name.removesuffix(suffix) in live for suffix in SUFFIXES
    )


async def test_every_metric_the_alerts_and_the_dashboard_name_is_served(
    services: Services,
) -> None:
    live = await live_names(services)
    named = {
        name
        for expr in [rule["expr"] for rule in rules()] + dashboard_expressions()
        for name in METRIC.findall(expr)
    }
    assert len(named) >= 20  # the test reads what it means to
    assert sorted(n for n in named if not exists(n, live)) == []


def test_every_alert_has_its_runbook_section_and_says_how_bad_it_is() -> None:
    sections = re.findall(r"^## (\S+)$", RUNBOOK.read_text(), re.MULTILINE)
    alerts = [rule["alert"] for rule in rules()]
    assert sorted(sections) == sorted(alerts)
    assert len(alerts) == len(set(alerts))
    for rule in rules():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        anchor = rule["alert"].lower()
        assert rule["annotations"]["runbook"] == f"deploy/prometheus/runbook.md#{anchor}"


def test_the_alerts_cover_what_operations_asked_for() -> None:
    """Issue 40's list: deliveries failing for hangar's own reason, backlog age,
    auto-disables, no live worker, 5xx ratio, p99 latency, database errors, Redis down,
    retention not running."""
    by_metric = {name for rule in rules() for name in METRIC.findall(rule["expr"])}
    assert {
        "hangar_webhook_deliveries_held_total",
        "hangar_webhook_oldest_due_delivery_age_seconds",
        "hangar_webhook_subscriptions_auto_disabled_total",
        "hangar_scheduler_ticks_total",
        "hangar_http_requests_total",
        "hangar_http_request_duration_seconds_bucket",
        "hangar_database_errors_total",
        "hangar_redis_up",
        "hangar_scheduler_job_runs_total",
    } <= by_metric
