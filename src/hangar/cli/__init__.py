"""hangar, the integration surface: its server, its worker, and the operator's commands.

Commands that create something print one JSON object on stdout and exit 0. On error they
print a one-line reason on stderr and exit non-zero (2 for a mistake in the command line
itself). Progress goes to stderr. Settings come from HANGAR_* environment variables; see
the README.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

# typer carries its own copy of click (typer._click); its exceptions are the ones raised here.
from typer._click import exceptions as click

from hangar import __version__
from hangar.cli import backup, seed
from hangar.cli.common import fail
from hangar.cli.db import db_app
from hangar.cli.jobs import jobs_app
from hangar.cli.keys import key_app
from hangar.cli.orgs import member_app, org_app, user_app
from hangar.cli.secrets import secrets_app
from hangar.cli.serve import serve
from hangar.cli.webhooks import webhook_app
from hangar.cli.worker import worker
from hangar.foundation.config import ConfigError, log_format, log_level
from hangar.foundation.metrics import MULTIPROCESS_DIR
from hangar.logs import formats

# The order of registration is the order of `hangar --help`: commands, then groups.
# Plain click layout, as every group has (hangar.cli.common.command_group).
app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, rich_markup_mode=None)


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
    # Every command logs in the one format, at the one level (serve and worker configure
    # theirs again); a malformed level is refused in the format asked for.
    try:
        fmt = log_format(os.environ)
        level = log_level(os.environ)
    except ConfigError as exc:
        fail(str(exc))
    formats.configure(fmt, "command", level)
    _refuse_a_shared_metrics_directory()


def _refuse_a_shared_metrics_directory() -> None:
    """hangar alone sets PROMETHEUS_MULTIPROC_DIR, for the processes of one `hangar serve
    --workers N` (hangar.cli.processes); from the environment it would be shared."""
    shared = os.environ.get(MULTIPROCESS_DIR)
    if shared is None:
        return
    # prometheus-client, imported by now, has made this process's files there: taken back.
    for own in Path(shared).glob(f"*_{os.getpid()}.db"):
        own.unlink(missing_ok=True)
    fail(
        f"{MULTIPROCESS_DIR} is set: take it out of the environment (the env file); "
        "hangar serve --workers N makes a private one for each instance, and one shared by "
        "several mixes and deletes their metrics"
    )


app.command()(serve)
app.command()(worker)
app.command()(seed.seed)
app.command()(seed.demo)
app.command()(backup.backup)
app.command()(backup.restore)
app.add_typer(db_app, name="db")
app.add_typer(org_app, name="org")
app.add_typer(user_app, name="user")
app.add_typer(member_app, name="member")
app.add_typer(key_app, name="key")
app.add_typer(webhook_app, name="webhook")
app.add_typer(jobs_app, name="jobs")
app.add_typer(secrets_app, name="secrets")


def usage_error(exc: click.UsageError) -> str:
    """A command-line mistake as the one line the docs promise, with where to read more."""
    where = exc.ctx.command_path if exc.ctx is not None else "hangar"
    message = " ".join(exc.format_message().split()).rstrip(".")
    return f"hangar: {message} (see `{where} --help`)"


def main() -> None:
    # Not standalone: click would print a usage block and a boxed error; hangar prints one line.
    try:
        code = app(standalone_mode=False)
    except click.NoArgsIsHelpError as exc:
        # A group named alone (`hangar key`): its help, as before, and the usage exit code.
        typer.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        sys.exit(2)
    except click.UsageError as exc:
        typer.echo(usage_error(exc), err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        typer.echo(f"hangar: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
