"""The `hangar-client` command (also `python -m hangar_client`). Its one command, `listen`,
forwards hangar's events to a local receiver (hangar_client.listen).

Bad input is one line on stderr and exit status 2, hangar refusing is one line and 1, a
clean stop (Ctrl-C, SIGTERM) is 0. The API key is never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import contextlib
import os
import random
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn, cast

import httpx

from hangar_client import _config, _delivery
from hangar_client._core import utc_now
from hangar_client._listen_state import StateFile, state_dir
from hangar_client._version import VERSION
from hangar_client.async_client import AsyncClient
from hangar_client.errors import ConfigurationError
from hangar_client.events import EventName
from hangar_client.listen import Listener, ListenOptions

EXIT_BAD_INPUT = 2


class BadInput(Exception):
    """What is wrong with the command line, in one sentence."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's usage block is noise around the one line that matters.
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see --help)\n")


def _interval(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"takes seconds above 0, not {text!r}")
    return seconds


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="hangar-client", description="hangar's Python client, as a command.")
    top.add_argument("--version", action="version", version=f"hangar-client {VERSION}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listen = commands.add_parser(
        "listen",
        help="forward hangar's events to a local receiver, signed as hangar delivers them",
        description="Polls hangar's events API and POSTs each event to --forward-to exactly "
        "as hangar delivers webhooks, signed with a local secret it prints at start.",
    )
    listen.add_argument("--forward-to", required=True, metavar="URL", help="the receiver")
    listen.add_argument(
        "--event",
        dest="events",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME",
        help="only these events (repeatable; default: every event)",
    )
    listen.add_argument(
        "--secret", help="sign with this secret (hex, or its whsec_ form); default: a new one"
    )
    listen.add_argument("--resume", action="store_true", help="continue where the last run stopped")
    listen.add_argument(
        "--interval",
        type=_interval,
        default=5.0,
        metavar="SECONDS",
        help="seconds between polls once caught up (default 5)",
    )
    listen.add_argument("--base-url", help="hangar's address (default: $HANGAR_BASE_URL)")
    listen.add_argument("--key", help="an API key with read:events (default: $HANGAR_API_KEY)")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        base_url, key, options = _settings(args, os.environ)
    except BadInput as exc:
        print(f"hangar-client {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    state = StateFile.of(state_dir(os.environ), base_url, key, options.events)
    try:
        return asyncio.run(_listen(base_url, key, options, state))
    except KeyboardInterrupt:  # before the loop's own handler was in place
        return 0


def _settings(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[str, str, ListenOptions]:
    base_url = args.base_url or env.get("HANGAR_BASE_URL", "")
    if not base_url:
        raise BadInput("no base URL: pass --base-url or set HANGAR_BASE_URL")
    base_url = _http_url(base_url, "the base URL")
    key = args.key or env.get("HANGAR_API_KEY", "")
    if not key:
        raise BadInput("no API key: pass --key or set HANGAR_API_KEY")
    try:
        _config.api_key(key, "the API key (--key or HANGAR_API_KEY)")
    except ConfigurationError as exc:
        raise BadInput(str(exc)) from None
    forward_to = args.forward_to
    if "://" not in forward_to:
        forward_to = f"http://{forward_to}"  # `--forward-to localhost:3000/hooks`
    options = ListenOptions(
        forward_to=_http_url(forward_to, "--forward-to"),
        secret=_secret(args.secret),
        # Names as typed: hangar checks them (422 UNKNOWN_EVENT), and knows newer ones.
        events=cast(tuple[EventName, ...], tuple(dict.fromkeys(args.events))),
        resume=args.resume,
        interval=args.interval,
    )
    return base_url, key, options


def _http_url(text: str, what: str) -> str:
    try:
        return _config.http_url(text, what)
    except ConfigurationError as exc:
        raise BadInput(str(exc)) from None


def _secret(given: str | None) -> str:
    if given is None:
        return _delivery.new_secret()
    secret = given
    if given.startswith("whsec_"):
        try:
            secret = base64.b64decode(given.removeprefix("whsec_"), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise BadInput("--secret: what follows whsec_ is not base64 of a secret") from None
    if not secret or secret != secret.strip():
        raise BadInput("--secret must not be empty or start or end with spaces")
    return secret


async def _listen(base_url: str, key: str, options: ListenOptions, state: StateFile) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(number, stop.set)
        except NotImplementedError:  # Windows' event loops
            signal.signal(number, lambda _number, _frame: loop.call_soon_threadsafe(stop.set))
    try:
        # The listener sets the retries it needs (unbounded waits, each one said).
        async with AsyncClient(base_url, key) as api, httpx.AsyncClient() as out:
            listener = Listener(
                api,
                out,
                options,
                state,
                stop,
                out=sys.stdout,
                err=sys.stderr,
                now=utc_now,
                sleep=asyncio.sleep,
                random=random.random,
            )
            return await listener.run()
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(number)
