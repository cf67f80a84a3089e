"""`hangar secrets`: the secrets sealed with HANGAR_SECRET_KEY."""

from __future__ import annotations

import asyncio

import typer

from hangar.accounts import second_factor
from hangar.cli.common import command_group, emit, fail, migrated_settings
from hangar.db import key_check
from hangar.db.engine import make_engine
from hangar.foundation.clock import SystemClock
from hangar.webhooks.service import Resealed, reseal_secrets

secrets_app = command_group("The secrets sealed with HANGAR_SECRET_KEY.")

RESEAL_HELP = """Re-seal every webhook secret, and every account's two-factor secret, with the
current HANGAR_SECRET_KEY.

A step of a key rotation (README: "Rotating the secret key"). Run it once, from any machine,
after HANGAR_SECRET_KEY is the new key and HANGAR_SECRET_KEY_PREVIOUS holds the old one on
every process, and every process has restarted with them. When it exits 0, drop the old key
from HANGAR_SECRET_KEY_PREVIOUS everywhere and restart again.

Safe while hangar serves and delivers: it works in batches of short transactions, and a
subscription created or deleted meanwhile is left as it is. Running it again changes nothing.
The secrets themselves stay the same, so receivers notice nothing; deleted subscriptions are
resealed too, so the old key opens nothing in a later copy of the database, and so is the
previous secret of a subscription whose secret was rotated (it signs during the grace). Once
no live secret needs an older key, the database records the current key as the one its
secrets are sealed with: from then on a process holding only an older key refuses to start.

Progress goes to stderr. One JSON object on stdout counts the secrets resealed, those already
sealed with the current key, and those no key opens (listed by subscription and organization
id, never their content). If a live subscription's secret is unreadable it exits 1: the key
that sealed it is missing from HANGAR_SECRET_KEY_PREVIOUS. Two-factor secrets are counted under
`two_factor`; one no key opens (listed by account id) exits 1 too."""


def _progress(found: Resealed) -> None:
    typer.echo(
        f"hangar: {found.checked} webhook secrets checked: {found.resealed} resealed, "
        f"{found.already_current} already current, {found.unreadable_secrets} unreadable",
        err=True,
    )


@secrets_app.command("reseal", help=RESEAL_HELP)
def secrets_reseal() -> None:
    current = migrated_settings()

    async def main() -> tuple[Resealed, second_factor.Resealed]:
        # One connection: one short transaction at a time.
        engine = make_engine(current.database_url, pool_size=1)
        try:
            found = await reseal_secrets(engine, current, progress=_progress)
            codes = await second_factor.reseal_all(engine, current)
            if not found.blocking and not codes.unreadable:
                # No live secret needs an older key now: processes holding only an older
                # key must not start (hangar.wiring.secret_key).
                async with engine.begin() as conn:
                    await key_check.record(conn, current.secret_key, SystemClock().now())
            return found, codes
        finally:
            await engine.dispose()

    found, codes = asyncio.run(main())
    emit(
        {
            "resealed": found.resealed,
            "already_current": found.already_current,
            "unreadable": found.unreadable_secrets,
            "unreadable_subscriptions": [
                {"id": u.subscription_id, "org_id": u.org_id, "deleted": u.deleted}
                for u in found.unreadable
            ],
            "two_factor": {
                "resealed": codes.resealed,
                "already_current": codes.already_current,
                "unreadable_accounts": [str(u) for u in codes.unreadable],
            },
        }
    )
    if codes.unreadable:
        fail(
            f"{len(codes.unreadable)} account(s) have a two-factor secret that no key held "
            "opens: add the key it was sealed with to HANGAR_SECRET_KEY_PREVIOUS and run this "
            "again, or remove it with `hangar user reset-2fa` (listed on stdout by account id)"
        )
    if found.blocking:
        count = len(found.blocking)
        which = (
            "1 live webhook subscription has"
            if count == 1
            else f"{count} live webhook subscriptions have"
        )
        fail(
            f"{which} a secret that neither HANGAR_SECRET_KEY nor any key in "
            "HANGAR_SECRET_KEY_PREVIOUS opens: add the key it was sealed with to "
            "HANGAR_SECRET_KEY_PREVIOUS and run this again before dropping any key (listed on "
            "stdout by subscription and organization id)"
        )
