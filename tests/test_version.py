"""One version number. The package's (`hangar.__version__`, which pyproject.toml reads),
`hangar --version`, the live OpenAPI description's `info.version`, the calendar's PRODID and
CHANGELOG.md's top entry all say the same, and it is the API version service-spec.md fixes.
The built wheel's version is checked in tests/test_wheel.py."""

from __future__ import annotations

import tomllib
from pathlib import Path

import httpx
from typer.testing import CliRunner

from hangar import __version__
from hangar.cli import app as cli
from hangar.external.calendar import PRODID
from hangar.web import changelog

# service-spec.md ("Versioning" 1) fixed 1.1.0; 1.2.0 to 1.5.0 are minor versions, additions
# only.
SPEC_API_VERSION = "1.5.0"


async def test_every_place_that_names_the_version_names_the_same_one(
    client: httpx.AsyncClient,
) -> None:
    printed = CliRunner().invoke(cli, ["--version"])
    assert printed.exit_code == 0, printed.output
    openapi = await client.get("/api/v1/external/openapi.json")
    named = {
        "hangar.__version__": __version__,
        "hangar --version": printed.output.strip().removeprefix("hangar "),
        "OpenAPI info.version": openapi.json()["info"]["version"],
        "CHANGELOG.md top entry": changelog.load().entries[0].version,
        "calendar PRODID": PRODID.split("External API ")[1].split("//")[0],
    }
    assert named == dict.fromkeys(named, SPEC_API_VERSION)


def test_pyproject_takes_the_version_from_the_package(repo_root: Path) -> None:
    # A version written in pyproject.toml as well would be a second source to forget.
    config = tomllib.loads((repo_root / "pyproject.toml").read_text())
    assert "version" not in config["project"]
    assert "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "hangar.__version__"}
