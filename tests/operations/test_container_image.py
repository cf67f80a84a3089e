"""deploy/container/Dockerfile, read as `docker build` would (no container engine runs on
these machines): Debian's slim Python of the version hangar requires, no build tools, a
numeric user that is not root, and the one install step ./dev smoke runs outside a
container (deploy/container/install.sh: CI installs the release exactly as the image does,
then serves every page from it). Its build context is the release folder ./dev release
makes, which holds every file the Dockerfile copies."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from scripts import release
from scripts.smoke_installed import INSTALL_SCRIPT, ROOT

from tests.fixtures.deploy import DEPLOY

DOCKERFILE = DEPLOY / "container" / "Dockerfile"
# What would put a compiler in the image: hangar's dependencies install as wheels only.
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|clang|make|build-essential|[a-z0-9.+-]+-dev)\b")


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments left out."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word, " ".join(rest.split())))
    return found


def test_one_stage_from_the_slim_python_hangar_requires() -> None:
    (base,) = [args for word, args in instructions() if word == "FROM"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    oldest = project["requires-python"].removeprefix(">=")
    assert re.fullmatch(rf"python:{re.escape(oldest)}-slim-\w+", base), base


def test_no_build_tools_and_wheels_only() -> None:
    for word, args in instructions():
        if word == "RUN" and "apt-get install" in args:
            assert not BUILD_TOOLS.search(args.split("apt-get install", 1)[1]), args
    script = INSTALL_SCRIPT.read_text()
    assert "--only-binary=:all:" in script
    assert "--require-hashes" in script


def test_it_installs_with_the_step_ci_runs_and_never_runs_as_root() -> None:
    steps = instructions()
    copies = [args.split() for word, args in steps if word == "COPY"]
    release_files = ["requirements-production.lock", "hangar-*.whl", "deploy/container/install.sh"]
    assert copies == [[*release_files, "/tmp/release/"]]
    assert INSTALL_SCRIPT == DEPLOY / "container" / "install.sh"  # what ./dev smoke runs
    runs = [shlex.split(args) for word, args in steps if word == "RUN"]
    assert ["sh", "/tmp/release/install.sh", "/opt/hangar", "/tmp/release"] in [
        run[:4] for run in runs
    ]
    (user,) = [args for word, args in steps if word == "USER"]
    uid, gid = (int(n) for n in user.split(":"))  # numeric: runAsNonRoot can check it
    assert uid != 0
    assert gid != 0
    # USER comes after every RUN: nothing the image runs at start runs as root.
    words = [word for word, _ in steps]
    assert max(i for i, w in enumerate(words) if w == "RUN") < words.index("USER")
    assert dict(steps)["ENTRYPOINT"] == '["hangar"]'


def test_the_release_folder_holds_what_the_dockerfile_copies(tmp_path: Path) -> None:
    release.main(tmp_path)  # ./dev release, into tmp_path
    (copy,) = [args.split() for word, args in instructions() if word == "COPY"]
    for pattern in copy[:-1]:
        assert len(list(tmp_path.glob(pattern))) == 1, pattern
    assert (tmp_path / "deploy" / "container" / "Dockerfile").read_text() == DOCKERFILE.read_text()
