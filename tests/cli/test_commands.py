"""The `hangar` command line (interfaces.md §1), run as subprocesses (forked from the command
server, tests/fixtures/command_server.py; the installed entry point itself at the end) against
one fresh SQLite database for this module.

Commands that create something print one JSON object on stdout and exit 0; on error they print
a one-line reason on stderr, nothing on stdout, and exit non-zero. Independent invocations run
concurrently to keep the module quick.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
from alembic.script import ScriptDirectory
from sqlalchemy import func, insert, inspect, select, text

from hangar import __version__
from hangar.db.migrate import alembic_config
from hangar.fleet.models import Aircraft, MelItem
from hangar.foundation.ids import new_id
from hangar.keys.issuing import issue_key
from hangar.keys.models import ApiKey
from hangar.kit.scopes import FULL_WITHOUT_MEMBERS, SCOPES
from hangar.maintenance.models import MaintenanceLog, WorkOrder
from hangar.orgs.models import Invitation, Membership, Role
from hangar.reservations.models import Reservation
from hangar.squawks.models import Squawk
from hangar.webhooks.models import Event
from tests.fixtures.cli import ENTRY_POINT, Cli, api, services_of
from tests.fixtures.factories import T0, make_org
from tests.fixtures.invites import UserRow, user_row
from tests.fixtures.retention import delivery, kept, nothing_of, subscription

KEY_RE = re.compile(r"^svc_pk_[A-Za-z0-9_-]{43}$")
PASSWORD = "a long enough password"
SEED = {
    "reservations": 200,
    "aircraft": 5,
    "members": 10,
    "squawks": 20,
    "maintenance-logs": 10,
    "work-orders": 10,
}


async def get(client: httpx.AsyncClient, key: str, path: str, **params: Any) -> Any:
    response = await client.get(
        f"/api/v1/external/{path}", params=params, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def test_db_upgrade_migrates_a_new_database_to_head(cli: Cli) -> None:
    out = cli.upgraded.json()
    assert out["revision"] == "head"
    assert out["database"] == cli.url

    def tables(sync_conn: Any) -> set[str]:
        return set(inspect(sync_conn).get_table_names())

    head = ScriptDirectory.from_config(alembic_config(cli.url)).get_current_head()
    async with cli.engine.connect() as conn:
        found = await conn.run_sync(tables)
        revision = await conn.scalar(text("SELECT version_num FROM alembic_version"))
    assert revision == head
    assert {
        "alembic_version",
        "organizations",
        "users",
        "memberships",
        "api_keys",
        "aircraft",
        "reservations",
        "squawks",
        "maintenance_logs",
        "work_orders",
        "mel_items",
        "job_ticks",
    } <= found


async def test_org_create_prints_its_id_and_name(cli: Cli) -> None:
    assert set(cli.org) == {"id", "name"}
    assert cli.org["name"] == "Blue Sky Aviation"  # trimmed, as stored
    org_id = uuid.UUID(cli.org_id)
    async with cli.engine.connect() as conn:
        roles = set(await conn.scalars(select(Role.name).where(Role.org_id == org_id)))
    assert roles == {"admin", "instructor", "mechanic", "member"}


async def test_user_create_makes_a_member_who_can_sign_in(cli: Cli) -> None:
    email = f"chief-{uuid.uuid4().hex[:8]}@example.org"
    ran = await cli.run(
        "user",
        "create",
        "--org",
        cli.org_id,
        "--email",
        email,
        "--password",
        PASSWORD,
        "--role",
        "admin",
        "--first-name",
        "Chuck",
        "--last-name",
        "Yeager",
        "--phone",
        "+15550001111",
    )
    out = ran.json()

    assert set(out) == {"user_id", "membership_id", "role", "account", "status"}
    assert (out["role"], out["account"], out["status"]) == ("admin", "created", "active")
    async with cli.engine.connect() as conn:
        membership = (
            await conn.execute(
                select(Membership.user_id, Membership.org_id, Role.name)
                .join(Role, Role.id == Membership.role_id)
                .where(Membership.id == uuid.UUID(out["membership_id"]))
            )
        ).one()
    assert (str(membership.user_id), str(membership.org_id), membership.name) == (
        out["user_id"],
        cli.org_id,
        "admin",
    )
    async with api(cli) as client:
        signed_in = await client.post("/api/session", json={"email": email, "password": PASSWORD})
        assert signed_in.status_code == 200, signed_in.text
        body = signed_in.json()
        assert body["user"]["id"] == out["user_id"]
        [mine] = body["memberships"]
        assert (mine["org_id"], mine["role_name"]) == (cli.org_id, "admin")
        assert "org.settings" in mine["capabilities"]
        wrong = await client.post("/api/session", json={"email": email, "password": "nope" * 3})
        assert wrong.status_code == 401
        # The contact fields were stored as given.
        admin_key = await _full_key(cli, uuid.UUID(cli.org_id))
        members = await get(client, admin_key, "members")
    [person] = [m for m in members if m["user_id"] == out["user_id"]]
    assert (person["email"], person["first_name"], person["last_name"], person["phone"]) == (
        email,
        "Chuck",
        "Yeager",
        "+15550001111",
    )
    assert person["role_name"] == "admin"


async def test_user_create_never_sets_an_existing_accounts_password(cli: Cli) -> None:
    elsewhere = await make_org(cli.engine, "Elsewhere Flying Club")
    email = f"owner-{uuid.uuid4().hex[:8]}@example.org"
    await elsewhere.member("member", email=email, first_name="Own", password=PASSWORD)
    other_password = "the operator's idea"
    base = ["user", "create", "--org", cli.org_id, "--email", email.upper()]
    members_before = await _memberships(cli)

    refused, missing = await asyncio.gather(
        cli.run(*base, "--role", "admin", "--password", other_password),
        cli.run(*base[:-1], f"new-{email}", "--role", "member"),
    )

    reason = refused.refused()
    assert "already has an account" in reason
    assert "omit --password" in reason
    assert "--password is required" in missing.refused()
    assert await _memberships(cli) == members_before
    async with api(cli) as client:
        assert (
            await client.post("/api/session", json={"email": email, "password": other_password})
        ).status_code == 401


async def test_member_invite_prints_a_link_the_person_opens_to_join(cli: Cli) -> None:
    email = f"invitee-{uuid.uuid4().hex[:8]}@example.org"

    ran = await cli.run(
        "member", "invite", "--org", cli.org_id, "--email", email, "--role", "mechanic",
        "--first-name", "Ina", "--last-name", "Vitee",
    )  # fmt: skip

    out = ran.json()
    assert set(out) == {
        "user_id",
        "membership_id",
        "role",
        "status",
        "invitation_url",
        "invitation_expires_at",
    }
    assert (out["role"], out["status"]) == ("mechanic", "pending")
    # No HANGAR_PUBLIC_URL in the environment: the default address.
    assert out["invitation_url"].startswith("http://127.0.0.1:8000/invitations/")
    assert out["invitation_expires_at"].endswith("Z")
    token = out["invitation_url"].rsplit("/", 1)[1]
    async with cli.engine.connect() as conn:
        status = await conn.scalar(
            select(Membership.status).where(Membership.id == uuid.UUID(out["membership_id"]))
        )
        stored = await conn.scalar(select(func.count()).select_from(Invitation))
    assert status == "pending"
    assert stored is not None
    assert stored >= 1
    # The pending member is the invitation's placeholder, not an account.
    assert await user_row(cli.engine, out["user_id"]) == UserRow(None, False)
    async with api(cli) as client:
        shown = await client.get(f"/api/invitations/{token}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["email"] == email
        joined = await client.post(
            f"/api/invitations/{token}/password", json={"password": "chosen by ina"}
        )
        assert joined.status_code == 200, joined.text
        assert [m["org_id"] for m in joined.json()["memberships"]] == [cli.org_id]
        # Ina's new account is the placeholder itself: the id printed is hers from now on.
        assert joined.json()["user"] == {"id": out["user_id"], "email": email}


async def test_member_invite_of_an_email_with_an_account_prints_a_placeholder_id(
    cli: Cli,
) -> None:
    elsewhere = await make_org(cli.engine, "Invites Elsewhere Club")
    email = f"has-one-{uuid.uuid4().hex[:8]}@example.org"
    account = await elsewhere.member("member", email=email, password=PASSWORD)

    ran = await cli.run(
        "member", "invite", "--org", cli.org_id, "--email", email, "--role", "member"
    )

    out = ran.json()
    assert out["user_id"] != str(account)
    assert await user_row(cli.engine, out["user_id"]) == UserRow(None, False)
    assert await user_row(cli.engine, account) == UserRow(email, True)


async def test_key_create_prints_the_key_once_and_stores_only_its_hash(cli: Cli) -> None:
    ran = await cli.run(
        "key",
        "create",
        "--org",
        cli.org_id,
        "--name",
        "fleet board",
        "--scope",
        "read:aircraft",
        "--scope",
        "read:squawks",
    )
    out = ran.json()

    assert set(out) == {"id", "key", "prefix", "scopes"}
    key = out["key"]
    assert KEY_RE.match(key), key
    assert out["prefix"] == key[:12]
    assert sorted(out["scopes"]) == ["read:aircraft", "read:squawks"]
    async with cli.engine.connect() as conn:
        row = (await conn.execute(select(ApiKey).where(ApiKey.id == uuid.UUID(out["id"])))).one()
    assert str(row.org_id) == cli.org_id
    assert row.prefix == key[:12]
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in str(tuple(row))
    # The key works, with exactly its scopes.
    async with api(cli) as client:
        assert await get(client, key, "aircraft") == []
        refused = await client.get(
            "/api/v1/external/reservations", headers={"Authorization": f"Bearer {key}"}
        )
        assert refused.status_code == 403
        assert refused.json()["code"] == "INSUFFICIENT_SCOPE"


async def test_key_create_takes_read_events(cli: Cli) -> None:
    out = (
        await cli.run(
            "key", "create", "--org", cli.org_id, "--name", "catch-up", "--scope", "read:events"
        )
    ).json()
    assert out["scopes"] == ["read:events"]
    async with api(cli) as client:
        body = await get(client, out["key"], "events")
    assert body["items"] == []
    assert isinstance(body["next_cursor"], str)


async def test_errors_are_one_line_on_stderr_and_nothing_on_stdout(cli: Cli) -> None:
    nowhere = str(uuid.uuid4())
    user = ["user", "create", "--email", "x@example.org", "--password", PASSWORD]
    cases = {
        "unknown role": [*user, "--org", cli.org_id, "--role", "pilot"],
        "no scope": ["key", "create", "--org", cli.org_id, "--name", "k"],
        "unknown scope": [
            "key",
            "create",
            "--org",
            cli.org_id,
            "--name",
            "k",
            "--scope",
            "read:everything",
        ],
        "unknown org (key)": [
            "key",
            "create",
            "--org",
            nowhere,
            "--name",
            "k",
            "--scope",
            "read:aircraft",
        ],
    }
    members_before = await _memberships(cli)

    ran = await asyncio.gather(*(cli.run(*a) for a in cases.values()))

    reasons = {case: result.refused() for case, result in zip(cases, ran, strict=True)}
    assert "role" in reasons["unknown role"]
    assert "admin, instructor, mechanic, member" in reasons["unknown role"]
    assert "scope" in reasons["no scope"].lower()
    assert "read:everything" in reasons["unknown scope"]
    assert nowhere in reasons["unknown org (key)"]
    # Nothing was written by any of them.
    async with cli.engine.connect() as conn:
        keys = set(await conn.scalars(select(ApiKey.name).where(ApiKey.name == "k")))
    assert keys == set()
    assert await _memberships(cli) == members_before


async def test_command_line_mistakes_are_one_line_with_where_to_look(cli: Cli) -> None:
    cases = {
        ("key", "create", "--bogus"): ("--bogus", "hangar key create --help"),
        ("key", "create", "--org", cli.org_id): ("--name", "hangar key create --help"),
        ("serve", "--port", "eighty"): ("--port", "hangar serve --help"),
        ("nosuch",): ("nosuch", "hangar --help"),
    }

    ran = await asyncio.gather(*(cli.run(*args) for args in cases))

    for (args, (named, pointer)), result in zip(cases.items(), ran, strict=True):
        reason = result.refused()
        assert result.code == 2, (args, result.code)
        assert reason.startswith("hangar: "), reason
        assert named in reason, reason
        assert f"(see `{pointer}`)" in reason, reason
        assert "╭" not in reason
        assert "Usage:" not in reason


async def test_help_reads_as_prose_with_named_values_and_every_scope(cli: Cli) -> None:
    top, key_create, serve, seed = await asyncio.gather(
        cli.run("--help"),
        cli.run("key", "create", "--help"),
        cli.run("serve", "--help"),
        cli.run("seed", "--help"),
    )

    for ran in (top, key_create, serve, seed):
        assert ran.code == 0, ran.stderr
        # Not typer's type labels, not box drawing, not a pointer into our own spec files.
        assert not re.search(r"<(str|int|bool|list\[str\])>", ran.stdout), ran.stdout
        assert "╭" not in ran.stdout
        assert "interfaces.md" not in ran.stdout
    # A paragraph is re-flowed, not cut where the source line ended.
    assert "On error they print a one-line reason" in " ".join(top.stdout.split())
    for scope in SCOPES:
        assert f"    {scope}\n" in key_create.stdout
    assert "--scope SCOPE" in key_create.stdout
    assert "--org ORG_ID" in key_create.stdout
    assert "--workers N|auto" in serve.stdout
    assert "--reservations COUNT" in seed.stdout


async def test_a_contact_only_key_is_issued_with_a_note_saying_what_it_cannot_read(
    cli: Cli,
) -> None:
    only_full = ["key", "create", "--org", cli.org_id, "--name", "contacts"]
    full, both = await asyncio.gather(
        cli.run(*only_full, "--scope", "read:members.full"),
        cli.run(*only_full, "--scope", "read:members.full", "--scope", "read:members"),
    )

    assert full.json()["scopes"] == ["read:members.full"]
    assert full.stderr == f"hangar: note: {FULL_WITHOUT_MEMBERS}\n"
    assert both.json()["scopes"] == ["read:members", "read:members.full"]
    assert both.stderr == ""


async def _memberships(cli: Cli, org_id: uuid.UUID | None = None) -> int:
    """The memberships of `org_id`, by default the module's organization's."""
    async with cli.engine.connect() as conn:
        found = await conn.scalar(
            select(func.count())
            .select_from(Membership)
            .where(Membership.org_id == (org_id or uuid.UUID(cli.org_id)))
        )
    return int(found or 0)


async def _full_key(cli: Cli, org_id: uuid.UUID) -> str:
    async with cli.engine.begin() as conn:
        return (await issue_key(conn, org_id, name="reader", scopes=list(SCOPES), now=T0)).key


async def _live_ids(cli: Cli, model: Any, org_id: uuid.UUID) -> tuple[set[str], int]:
    """Ids of the organization's rows not soft-deleted, and how many rows there are at all."""
    async with cli.engine.connect() as conn:
        live = set(
            await conn.scalars(
                select(model.id).where(model.org_id == org_id, model.deleted_at.is_(None))
            )
        )
        total = await conn.scalar(
            select(func.count()).select_from(model).where(model.org_id == org_id)
        )
    return {str(i) for i in live}, int(total or 0)


async def test_seed_writes_what_was_asked_and_the_api_reads_it(cli: Cli) -> None:
    # A second organization, with rows of every kind: none may show up for the first.
    other = await make_org(cli.engine, "Other Aero Club")
    plane = await other.add(Aircraft)
    other_reservation = await other.add(Reservation, aircraft_id=plane["id"])
    foreign = {
        str(plane["id"]),
        str(other_reservation["id"]),
        str((await other.add(Squawk, aircraft_id=plane["id"]))["id"]),
        str((await other.add(MaintenanceLog, aircraft_id=plane["id"]))["id"]),
        str((await other.add(WorkOrder, aircraft_id=plane["id"]))["id"]),
        str(await other.member()),
    }
    args = [f"--{name}={count}" for name, count in SEED.items()]
    # An organization of this test's own: the module's is shared with tests that may run
    # before this one, in any order.
    org_id = (await make_org(cli.engine, "Seeded Aero")).id
    members_before = await _memberships(cli, org_id)

    ran = await cli.run("seed", "--org", str(org_id), *args)

    out = ran.json()
    assert out == {
        "org": str(org_id),
        "aircraft": 5,
        "members": 10,
        "reservations": 200,
        "squawks": 20,
        "maintenance_logs": 10,
        "work_orders": 10,
    }
    key = await _full_key(cli, org_id)
    async with api(cli) as client:
        page = await get(client, key, "reservations", limit=500)
        fleet = await get(client, key, "aircraft")
        squawks = await get(client, key, "squawks")
        logs = await get(client, key, "maintenance-logs")
        orders = await get(client, key, "work-orders")
        members = await get(client, key, "members")
        other_page = await get(client, other.key, "reservations", limit=500)

    expected = {
        "reservations": (Reservation, [r["id"] for r in page["items"]], 200),
        "aircraft": (Aircraft, [a["id"] for a in fleet], 5),
        "squawks": (Squawk, [s["id"] for s in squawks], 20),
        "maintenance logs": (MaintenanceLog, [m["id"] for m in logs], 10),
        "work orders": (WorkOrder, [w["id"] for w in orders], 10),
    }
    for what, (model, shown, asked) in expected.items():
        live, total = await _live_ids(cli, model, org_id)
        assert total == asked, what  # every row asked for was written
        assert len(shown) == len(set(shown)), what
        assert set(shown) == live, what  # and the API shows each live one
        assert not foreign & set(shown), what
    assert page["next_cursor"] is None
    assert len(page["items"]) >= 150  # seeded rows are mostly live, so the check has teeth
    assert len(fleet) >= 1
    member_ids = {m["user_id"] for m in members}
    assert not foreign & member_ids
    async with cli.engine.connect() as conn:
        live_members = await conn.scalar(
            select(func.count())
            .select_from(Membership)
            .where(Membership.org_id == org_id, Membership.deleted_at.is_(None))
        )
    assert await _memberships(cli, org_id) == members_before + 10
    assert len(member_ids) == live_members
    # The other organization sees only its own one reservation.
    assert [r["id"] for r in other_page["items"]] == [str(other_reservation["id"])]


async def test_jobs_run_mel_expiry_expires_an_overdue_item_once(cli: Cli) -> None:
    org_id = (await make_org(cli.engine, "MEL Aero")).id  # the module's org stays without one
    plane = new_id()
    item = new_id()
    async with cli.engine.begin() as conn:
        await conn.execute(
            insert(Aircraft).values(
                id=plane,
                org_id=org_id,
                tail_number="N77MEL",
                aircraft_type="Piper PA-28",
                is_active=True,
                created_at=T0,
            )
        )
        await conn.execute(
            insert(MelItem).values(
                id=item,
                org_id=org_id,
                aircraft_id=plane,
                item_description="Pitot heat inoperative",
                mel_category="c",
                status="deferred",
                deferral_date=date(2001, 1, 1) - timedelta(days=10),
                due_date=date(2001, 1, 1),  # before any real today
                created_at=T0,
            )
        )

    ran = await cli.run("jobs", "run", "mel-expiry")

    assert ran.json() == {"expired": 1}  # a fresh database: this is the only overdue item
    async with cli.engine.connect() as conn:
        status = await conn.scalar(select(MelItem.status).where(MelItem.id == item))
        active = await conn.scalar(select(Aircraft.is_active).where(Aircraft.id == plane))
        fired = sorted(await conn.scalars(select(Event.name).where(Event.org_id == org_id)))
    assert status == "expired"
    assert active is False
    assert fired == ["aircraft.grounded", "mel.expired"]


async def test_jobs_run_retention_prunes_now_and_prints_what_it_deleted(cli: Cli) -> None:
    services = services_of(cli)
    owner = await make_org(cli.engine, "Retention")
    sub = await subscription(services, owner)
    long_ago = datetime(2001, 1, 1, tzinfo=UTC)  # before any real today's window
    made = [
        await delivery(services, owner, sub, finished=long_ago, attempts=2, redeliveries=1)
        for _ in range(3)
    ]
    recent = await delivery(services, owner, sub, finished=datetime.now(UTC))

    ran = await cli.run("jobs", "run", "retention")

    done = ran.json()
    assert list(done) == [
        "webhook_deliveries",
        "webhook_attempts",
        "webhook_redeliveries",
        "events",
        "webhook_previous_secrets",
        "webhook_recoveries",
        "sessions",
        "invitations",
        "audit_entries",
        "idempotency_keys",
    ]
    # A database of this module's own, where no other delivery was made.
    assert (done["webhook_deliveries"], done["webhook_attempts"]) == (3, 6)
    assert done["webhook_redeliveries"] == 3
    assert done["events"] >= 3
    for m in made:
        assert await kept(cli.engine, m) == nothing_of(m)
    assert await kept(cli.engine, recent) == recent.rows


async def test_the_entry_point_is_the_installed_command(cli: Cli) -> None:
    assert ENTRY_POINT.exists(), f"{ENTRY_POINT}: install the project (pip install -e .)"
    assert "hangar.cli" in ENTRY_POINT.read_text()
    # Exec'd for real, not forked from the command server: the installed command works.
    ran = await cli.run("--version", real=True)
    assert (ran.code, ran.stdout, ran.stderr) == (0, f"hangar {__version__}\n", "")
