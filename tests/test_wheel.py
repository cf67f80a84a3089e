"""Installed = checkout: the wheel holds every file the package reads at run time, and the
package reads its files only through itself.

The wheel is built once for this module (about 3 s), from a copy of the sources so that a
build/ left in the checkout can neither add a file nor hide a missing one. CI goes further
(scripts/smoke_installed.py: a fresh environment, the real server, every page).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from scripts.smoke_installed import build_wheel

from hangar import __version__
from hangar.app import create_app
from hangar.kit.container import Services
from hangar.kit.scopes import SCOPES
from tests.fixtures.routes import app_routes


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built as the smoke run builds it, so the two cannot drift apart.
    return build_wheel(tmp_path_factory.mktemp("build"))


def package_files(repo_root: Path) -> set[str]:
    package = repo_root / "src" / "hangar"
    return {
        f"hangar/{path.relative_to(package).as_posix()}"
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_wheel_holds_exactly_the_files_of_the_package(wheel: Path, repo_root: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        shipped = {name for name in whl.namelist() if name.startswith("hangar/")}
    assert shipped == package_files(repo_root)
    # What Alembic needs besides the revisions: its environment and its template.
    assert {"hangar/db/migrations/env.py", "hangar/db/migrations/script.py.mako"} <= shipped


def test_the_wheel_ships_the_repositorys_changelog(wheel: Path, repo_root: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        shipped = whl.read("hangar/CHANGELOG.md")
    assert shipped == (repo_root / "CHANGELOG.md").read_bytes()


def test_the_wheel_carries_the_one_version_and_the_command(wheel: Path) -> None:
    assert wheel.name == f"hangar-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as whl:
        info = f"hangar-{__version__}.dist-info"
        assert f"\nVersion: {__version__}\n" in whl.read(f"{info}/METADATA").decode()
        assert "hangar = hangar.cli:main" in whl.read(f"{info}/entry_points.txt").decode()


def test_no_module_finds_files_beside_its_own_source(repo_root: Path) -> None:
    """Run-time files come through the package (importlib.resources, Jinja's PackageLoader,
    Alembic's "package:dir"), never from a path worked out from `__file__`: that is how
    /changelog once read a CHANGELOG.md that only a checkout has."""
    package = repo_root / "src" / "hangar"
    found = [
        f"{path.relative_to(package)}:{node.lineno}"
        for path in sorted(package.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Name) and node.id == "__file__"
    ]
    assert found == []


# Run by the interpreter of this test run, with only the installed wheel on the path first.
_PROBE = """
import asyncio, json, sys
import httpx
import hangar
from hangar.app import create_app
from hangar.foundation.config import Settings
from hangar.db.migrate import upgrade

url = sys.argv[1]
upgrade(url)
app = create_app(settings=Settings(database_url=url, secret_key="s" * 40))

async def main():
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hangar.test") as c:
        return {path: (await c.get(path)).status_code for path in sys.argv[2:]}

print(json.dumps({"package": hangar.__file__, "status": asyncio.run(main())}))
"""

PAGES = [
    "/login",
    "/docs",
    "/changelog",
    "/changelog.rss",
    "/static/style.css",
    "/static/app.js",
    "/api/v1/external/openapi.json",
    "/api/health",
    "/api/health/ready",
]


def test_the_installed_wheel_migrates_and_serves_its_pages(wheel: Path, tmp_path: Path) -> None:
    # A pure-Python wheel installs by unpacking (what `pip install --target` does, in 1/20 of
    # the time); the dependencies are this run's.
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as whl:
        whl.extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(  # noqa: S603 - our own probe
        [sys.executable, "-c", _PROBE, f"sqlite:///{tmp_path / 'hangar.db'}", *PAGES],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert Path(result["package"]).is_relative_to(site)  # the wheel's copy, not the checkout
    assert result["status"] == dict.fromkeys(PAGES, 200)


def test_the_ci_smoke_of_the_installed_wheel_requests_every_get_route(
    repo_root: Path, services: Services
) -> None:
    # scripts/smoke_installed.py requests the routes it lists: a page added to the app and
    # not to that list would go unchecked in an installed hangar.
    script = ast.parse((repo_root / "scripts" / "smoke_installed.py").read_text())
    (listed,) = [
        ast.literal_eval(node.value)
        for node in script.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["GET_ROUTES"]
    ]
    get_routes = {
        path for method, path in app_routes(create_app(services).routes) if method == "GET"
    }
    assert set(listed) == get_routes
    # Its key holds every scope, or a new operation's route answers 403 there.
    (scopes,) = [
        ast.literal_eval(node.value)
        for node in script.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["SCOPES"]
    ]
    assert set(scopes) == set(SCOPES)
