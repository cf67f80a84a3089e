#!/bin/sh
# hangar's production install: the one step the Dockerfile runs, and the one ./dev smoke
# checks outside a container (scripts/smoke_installed.py), so the image installs what CI ran.
#
#   sh install.sh VENV RELEASE      RELEASE: a folder with one hangar-*.whl and
#                                   requirements-production.lock (what ./dev release makes)
#
# A fresh virtual environment at VENV holding exactly the release's pinned dependencies,
# their hashes checked and wheels only (nothing is compiled, so no build tools are needed),
# then the release's wheel alone. PYTHON names the interpreter (default python3).
set -eu
[ $# -eq 2 ] || { echo "usage: sh install.sh VENV RELEASE" >&2; exit 2; }
venv=$1
release=$2
set -- "$release"/hangar-*.whl
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
    echo "install.sh: expected exactly one hangar-*.whl in $release" >&2
    exit 2
fi
wheel=$1
"${PYTHON:-python3}" -m venv "$venv"
pip() {
    "$venv/bin/python" -m pip --disable-pip-version-check --no-cache-dir --quiet "$@"
}
pip install --require-hashes --only-binary=:all: -r "$release/requirements-production.lock"
pip install --no-deps "$wheel"
pip check
