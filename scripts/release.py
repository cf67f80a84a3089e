"""What an operator installs, in dist/: the wheel, requirements-production.lock beside it
and deploy/ (the units, the env file, the nginx site); docs/operators/install.md.
The wheel is built as ./dev smoke builds the one it checks, from a copy of the sources.

    ./dev release          (or .venv/bin/python -m scripts.release)
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from scripts.production_lock import PRODUCTION_LOCK, ROOT
from scripts.smoke_installed import build_wheel

DIST = ROOT / "dist"


def install_command(wheel: str) -> str:
    """The one install command of docs/operators/deploy.md: a fresh environment per release,
    made by the container image's own install step (deploy/container/install.sh), /opt/hangar
    its link."""
    version = wheel.split("-")[1]
    venv = f"/opt/hangar-{version}"
    return f"sh deploy/container/install.sh {venv} . && ln -sfn {venv} /opt/hangar"


def main(dist: Path = DIST) -> None:
    dist.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hangar-release-") as work:
        wheel = Path(shutil.copy2(build_wheel(Path(work)), dist))
    lock = Path(shutil.copy2(PRODUCTION_LOCK, dist))
    deploy = Path(shutil.copytree(ROOT / "deploy", dist / "deploy", dirs_exist_ok=True))
    for made in (wheel, lock, deploy):
        print(made.relative_to(dist.parent))
    command = install_command(wheel.name)
    print(f"installed on each machine, in {dist.name}/, as root, with:\n  {command}")


if __name__ == "__main__":
    main()
