"""Integrators generate types from the event schemas and the OpenAPI description's webhooks
(issue 42): datamodel-code-generator (Python, the dev lock's) from one served event schema and
from the live document, the models imported and fed real bodies; openapi-typescript (pinned
in tests/typegen_js) from the live document, a receiver's code against its types checked by
`tsc --noEmit`, with lines the compiler must refuse, so loose types (`any`) would fail."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import orjson
import pydantic
import pytest

from hangar.web.events import EVENTS
from hangar.webhooks.events.event_schemas import SCHEMA_EVENTS, event_schema_name
from tests.fixtures.locked_tools import NPM, NPM_ENV, NPX, npm_typegen

EXAMPLES: dict[str, Any] = {e.name: orjson.loads(e.example) for e in EVENTS}


def _run(args: list[str], cwd: Path) -> None:
    done = subprocess.run(  # noqa: S603 (pinned tools, no shell)
        args,
        cwd=cwd,
        env={**os.environ, **NPM_ENV},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout}\n{done.stderr}"


def _datamodel_codegen(source: Path, kind: str, out: Path, *extra: str) -> None:
    _run(
        [
            *(sys.executable, "-m", "datamodel_code_generator"),
            *("--input", str(source), "--input-file-type", kind, "--output", str(out)),
            *("--output-model-type", "pydantic_v2.BaseModel", "--target-python-version", "3.11"),
            *("--disable-timestamp", "--formatters", "builtin", *extra),
        ],
        out.parent,
    )


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # pydantic resolves the module's annotations through it
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[path.stem]
    return module


@pytest.fixture
async def document(client: httpx.AsyncClient, tmp_path: Path) -> Path:
    response = await client.get("/api/v1/external/openapi.json")
    assert response.status_code == 200
    path = tmp_path / "openapi.json"
    path.write_bytes(response.content)
    return path


async def test_python_models_from_one_event_schema(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    response = await client.get("/docs/events/aircraft.grounded.schema.json")
    schema = tmp_path / "aircraft_grounded.schema.json"
    schema.write_bytes(response.content)
    out = tmp_path / "aircraft_grounded_models.py"
    await asyncio.to_thread(_datamodel_codegen, schema, "jsonschema", out)
    models = _load(out)

    event = models.AircraftGroundedEvent
    by_admin = event.model_validate(EXAMPLES["aircraft.grounded"])
    assert isinstance(by_admin.delivered_at, datetime)
    assert isinstance(by_admin.data.root, models.AircraftGroundedAdminDeactivateData)
    by_job = {**EXAMPLES["aircraft.grounded"], "data": {"id": "a", "tail_number": "N1"}}
    by_job["data"]["reason"] = "mel_expired"
    assert isinstance(event.model_validate(by_job).data.root, models.AircraftGroundedMelExpiredData)
    # An admin's grounding without its aircraft_type is no body of this event.
    by_job["data"]["reason"] = "admin_deactivate"
    with pytest.raises(pydantic.ValidationError):
        event.model_validate(by_job)


async def test_python_models_from_the_openapi_webhooks(document: Path, tmp_path: Path) -> None:
    out = tmp_path / "hangar_event_models.py"
    await asyncio.to_thread(
        _datamodel_codegen, document, "openapi", out, "--openapi-scopes", "schemas", "webhooks"
    )
    models = _load(out)

    for event in SCHEMA_EVENTS:
        assert hasattr(models, event_schema_name(event)), event
    for name, body in EXAMPLES.items():
        parsed = getattr(models, event_schema_name(name)).model_validate(body)
        assert parsed.event == name
    completed = models.ReservationCompletedEvent.model_validate(EXAMPLES["reservation.completed"])
    assert isinstance(completed.data.checkout_completed_at, datetime)
    assert completed.data.hobbs_in == 2843.1
    wrong = {**EXAMPLES["reservation.completed"]}
    wrong["data"] = {**wrong["data"], "hobbs_in": "not hours"}
    with pytest.raises(pydantic.ValidationError):
        models.ReservationCompletedEvent.model_validate(wrong)


RECEIVER_TS = """\
import type { components, webhooks } from "./api";

type Body<E extends keyof webhooks> = NonNullable<
  webhooks[E]["post"]
>["requestBody"]["content"]["application/json"];

// Exactly the events hangar sends: a missing or an unknown one does not compile.
const handled: Record<keyof webhooks, true> = {
%(names)s
};

const cancelled: Body<"reservation.cancelled"> = %(cancelled)s;
const completed: Body<"reservation.completed"> = %(completed)s;

function describe(data: components["schemas"]["AircraftGroundedData"]): string {
  // The reason tells the two shapes apart; only the admin's has aircraft_type.
  return data.reason === "admin_deactivate" ? data.aircraft_type : data.tail_number;
}

const hours: number = completed.data.hobbs_in - completed.data.hobbs_out;
const instructor: string | null = cancelled.data.instructor_id;

// @ts-expect-error a cancelled reservation has no status
const status = cancelled.data.status;
type Completed = components["schemas"]["ReservationCompletedData"];
// @ts-expect-error hobbs readings are numbers
const text: Completed = { ...completed.data, hobbs_in: "1" };
// @ts-expect-error a body names its own event
const confused: Body<"reservation.cancelled"> = { ...cancelled, event: "reservation.created" };

export { handled, describe, hours, instructor, status, text, confused };
"""


@pytest.mark.skipif(
    NPM is None or NPX is None,
    reason="needs npm and npx (node 20) to run the tools pinned in tests/typegen_js",
)
# The first run on a machine installs tests/typegen_js (`npm ci`, about 15 s here).
@pytest.mark.timeout(300)
async def test_typescript_types_from_the_openapi_document(document: Path, tmp_path: Path) -> None:
    tools = await asyncio.to_thread(npm_typegen)
    assert NPX is not None
    generated = tmp_path / "api.d.ts"
    await asyncio.to_thread(
        _run,
        [NPX, "--no-install", "openapi-typescript", str(document), "-o", str(generated)],
        tools,
    )
    names = "\n".join(f'  "{event}": true,' for event in SCHEMA_EVENTS)
    check = tmp_path / "receiver.ts"
    check.write_text(
        RECEIVER_TS
        % {
            "names": names,
            "cancelled": json.dumps(EXAMPLES["reservation.cancelled"]),
            "completed": json.dumps(EXAMPLES["reservation.completed"]),
        }
    )
    tsc = [NPX, "--no-install", "tsc", "--noEmit", "--strict", "--target", "ES2022"]
    modules = ["--module", "ESNext", "--moduleResolution", "Bundler"]
    await asyncio.to_thread(_run, [*tsc, *modules, str(check)], tools)
