"""The `hangar` command (interfaces.md §1).

Commands that create something print one JSON object on stdout and exit 0; on error they
print a one-line reason on stderr and exit non-zero. Progress goes to stderr.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from hangar import __version__
from hangar.cli import seed
from hangar.cli.common import fail
from hangar.cli.db import db_app
from hangar.cli.jobs import jobs_app
from hangar.cli.keys import key_app
from hangar.cli.orgs import member_app, org_app, user_app
from hangar.cli.serve import serve
from hangar.cli.worker import worker
from hangar.config import ConfigError, log_format
from hangar.logs import formats

# The order of registration is the order of `hangar --help`: commands, then groups.
app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"hangar {__version__}")
        raise typer.Exit()


# typer's documented way to a --version: an eager option of the group's callback.
@app.callback()
def _options(
    version: Annotated[
        bool | None,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit"
        ),
    ] = None,
) -> None:
    # Every command logs in the one format (serve and worker configure theirs again).
    try:
        fmt = log_format(os.environ)
    except ConfigError as exc:
        fail(str(exc))
    formats.configure(fmt, "command")


app.command()(serve)
app.command()(worker)
app.command()(seed.seed)
app.command()(seed.demo)
app.add_typer(db_app, name="db")
app.add_typer(org_app, name="org")
app.add_typer(user_app, name="user")
app.add_typer(member_app, name="member")
app.add_typer(key_app, name="key")
app.add_typer(jobs_app, name="jobs")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
