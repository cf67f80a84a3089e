"""requirements-production.lock: what hangar needs at run time, from requirements.lock.

requirements.lock pins, with hashes, everything the tests run with: the package's own
dependencies and the dev extra's tools (uv pip compile pyproject.toml --extra dev). The
production lock is its subset that the [project] dependencies reach, entry for entry, so
that production runs exactly the versions the tests ran, and none of the tools. Which
entries those are, uv's "# via" notes say (each names the packages that need the entry).

    python3 scripts/production_lock.py     (./dev lock runs it after re-pinning)

Standard library only: it runs before any environment exists.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEV_LOCK = ROOT / "requirements.lock"
PRODUCTION_LOCK = ROOT / "requirements-production.lock"

HEADER = """\
# hangar's run-time dependencies, pinned with hashes to exactly the versions of
# requirements.lock (those the tests run with), without the development tools.
# Made from requirements.lock by `./dev lock` (scripts/production_lock.py): do not edit.
# Ships beside the wheel (`./dev release`); docs/operators/install.md, "Installing for production":
#   sh deploy/container/install.sh /opt/hangar-VERSION . && ln -sfn /opt/hangar-VERSION /opt/hangar
# (a fresh environment: this lock, hashes checked, wheels only, then the wheel alone)
"""


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def production_lock(dev_lock: str, pyproject: str) -> str:
    """The production lock's text: `dev_lock`'s entries (pin line and hashes) that the
    [project] dependencies of `pyproject` need, directly or through one another."""
    entries: dict[str, list[str]] = {}
    needed_by: dict[str, set[str]] = {}
    current = ""
    for line in dev_lock.splitlines():
        if match := re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", line):
            current = normalized(match[1])
            entries[current], needed_by[current] = [line], set()
        elif current and line.startswith("    --hash"):
            entries[current].append(line)
        elif current and line.startswith("    #"):
            # "# via a, b", or "# via" then one "#   name" line each.
            for who in line.strip().removeprefix("#").strip().removeprefix("via").split(","):
                if who.strip():
                    needed_by[current].add(normalized(who.split()[0]))
    dependencies = tomllib.loads(pyproject)["project"]["dependencies"]
    wanted = {normalized(re.split(r"[\[<>=!~; ]", dep)[0]) for dep in dependencies}
    missing = wanted - entries.keys()
    if missing:
        raise SystemExit(
            f"requirements.lock does not pin {', '.join(sorted(missing))}: run ./dev lock"
        )
    grew = True
    while grew:
        more = {name for name, who in needed_by.items() if who & wanted} - wanted
        wanted |= more
        grew = bool(more)
    return HEADER + "".join(f"{line}\n" for name in sorted(wanted) for line in entries[name])


def main() -> None:
    text = production_lock(DEV_LOCK.read_text(), (ROOT / "pyproject.toml").read_text())
    PRODUCTION_LOCK.write_text(text)
    print(f"{PRODUCTION_LOCK.name}: {text.count('==')} packages", file=sys.stderr)


if __name__ == "__main__":
    main()
