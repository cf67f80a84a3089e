"""The synchronous client over a real socket: uvicorn serving hangar on a loopback port, and
the README's example run as written, with that server's address and a real key."""

from __future__ import annotations

import ast
import contextlib
import html
import io
import re
from pathlib import Path

import httpx
import pytest

from hangar.fleet.models import Aircraft
from hangar.reservations.models import Reservation
from hangar.squawks.models import Squawk
from hangar.web.docs import SNIPPETS
from hangar_client import Client, Unauthorized
from tests.fixtures.factories import Org
from tests.fixtures.live_server import LiveServer

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


async def test_the_sync_client_over_a_socket(api_server: LiveServer, org: Org, other: Org) -> None:
    plane = (await org.add(Aircraft, tail_number="N42SO"))["id"]
    for _ in range(5):
        await org.add(Reservation, aircraft_id=plane)
    await org.add(Squawk, aircraft_id=plane)
    await other.add(Reservation)
    with Client(api_server.url, org.key) as hangar:
        walked = list(hangar.reservations(page_size=2))
        assert [r.aircraft_id for r in walked] == [str(plane)] * 5
        assert list(hangar.reservations(page_size=2, status="standby")) == []
        assert [a.tail_number for a in hangar.aircraft()] == ["N42SO"]
        assert [s.aircraft_id for s in hangar.squawks(aircraft_id=str(plane))] == [str(plane)]
        assert hangar.squawks(is_grounding=True) == []
        assert "BEGIN:VCALENDAR" in hangar.calendar()
    with Client(api_server.url, "svc_pk_" + "0" * 43) as wrong, pytest.raises(Unauthorized):
        wrong.members()


def readme_example() -> str:
    text = (CLIENT / "README.md").read_text()
    example: str = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    return example


def test_the_readme_example_fits_in_ten_lines() -> None:
    assert len(readme_example().strip().splitlines()) <= 10


async def test_docs_show_the_readme_example(client: httpx.AsyncClient) -> None:
    """/docs shows the example from a snippet shipped in hangar's package (an installed hangar
    has no clients/ directory): the same text as the README's."""
    assert (SNIPPETS / "client.py").read_text() == readme_example()
    page = await client.get("/docs")
    assert page.status_code == 200
    assert 'id="python-client"' in page.text
    assert readme_example() in html.unescape(page.text)
    assert "pip install ./clients/python" in page.text


async def test_the_readme_example_runs(api_server: LiveServer, org: Org) -> None:
    await org.add(Aircraft, tail_number="N7GR", is_active=False)
    code = readme_example().replace("http://127.0.0.1:8000", api_server.url)
    code = code.replace("svc_pk_...", org.key)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own README's example
    assert "grounded: ['N7GR'] open squawks: 0" in out.getvalue()
    assert f"subscribe: {api_server.url}/api/v1/external/reservations.ics?token=" in out.getvalue()


def test_the_package_does_not_import_the_server() -> None:
    imported = set()
    for path in (CLIENT / "src" / "hangar_client").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module.split(".")[0])
    assert "hangar" not in imported
    assert (CLIENT / "src" / "hangar_client" / "py.typed").exists()
