"""Installed = checkout: run hangar as an operator installs it, and request everything.

Builds the wheel, installs it as the container image does, with the Dockerfile's own
deploy/container/install.sh (the dependencies from requirements-production.lock, hashes
checked, wheels only, then the wheel: docs/operators/install.md's production install too)
into a fresh virtual environment in a temporary directory outside the checkout, makes an
organization, an admin, a key with every scope, rows, an invitation and a password reset
link through the installed `hangar` command, starts `hangar serve` on a fresh SQLite
database on a free loopback port, and requests every GET route of the app (the pages, the
screens signed in, the public API with the key, the management API with the session), every
same-origin link those pages carry (static files among them), and the two forms that show a
secret once. Then it backs the database up with `hangar backup` while it is served, restores
the backup into a new SQLite file with `hangar restore` (the key file copied beside it, as
docs/operators/backup.md says), serves that and asks it for the aircraft: the answer must be
the served database's. Last, two instances of it behind deploy/'s nginx are restarted one
after the other (SIGTERM) under load (scripts/rolling_restart.py): no request may fail or
take more than a second. Any answer that is not 2xx or 3xx fails, and so does a `hangar
--version` that is not the wheel's version. The server is always stopped; the directory is
removed unless --keep.

    ./dev smoke            (what .ci/run does; or .venv/bin/python scripts/smoke_installed.py)

It runs under ./dev's environment, whose pinned setuptools builds the wheel; HTTP is the
standard library's (the rolling restart's, that environment's httpx, and its nginx site and
test certificate are the tests' own: tests/fixtures/deploy.py). About two minutes, most of
it pip installing the pinned dependencies.
"""

from __future__ import annotations

import argparse
import html.parser
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION_LOCK = ROOT / "requirements-production.lock"  # scripts/production_lock.py
INSTALL_SCRIPT = ROOT / "deploy" / "container" / "install.sh"  # the Dockerfile's install
# What the build reads: the package and the files its metadata names.
SOURCES = ("src", "pyproject.toml", "README.md", "CHANGELOG.md")
SCOPES = (
    "read:reservations",
    "read:aircraft",
    "read:squawks",
    "read:members",
    "read:members.full",
    "read:maintenance",
    "read:events",
)
PASSWORD = "smoke-test-password-1"  # noqa: S105 - a throwaway account on a throwaway database
EMAIL = "admin@smoke.example"
# A public address literal: the webhook form accepts it without DNS, and nothing is sent
# (no event fires, no Test is pressed).
WEBHOOK_URL = "https://93.184.215.14/hangar-smoke"

# Every GET route of the app, as the app declares it. tests/test_wheel.py checks that this
# is exactly the app's list, so a new page cannot be left out of the check.
GET_ROUTES = (
    "/api/health",
    "/api/health/live",
    "/api/health/ready",
    "/metrics",
    "/api/v1/external/openapi.json",
    "/api/v1/external/reservations",
    "/api/v1/external/reservations.ics",
    "/api/v1/external/aircraft",
    "/api/v1/external/squawks",
    "/api/v1/external/members",
    "/api/v1/external/maintenance-logs",
    "/api/v1/external/work-orders",
    "/api/v1/external/events",
    "/api/v1/external/organization",
    "/api/session",
    "/api/invitations/{token}",
    "/api/orgs/{org_id}",
    "/api/orgs/{org_id}/api-keys",
    "/api/orgs/{org_id}/webhooks",
    "/api/orgs/{org_id}/webhooks/{sub_id}",
    "/api/orgs/{org_id}/webhooks/{sub_id}/deliveries",
    "/api/orgs/{org_id}/webhooks/{sub_id}/health",
    "/api/orgs/{org_id}/audit-log",
    "/static/{name}",
    "/login",
    "/login/two-factor",
    "/invitations/{token}",
    "/password-reset/{token}",
    "/settings",
    "/settings/two-factor",
    "/settings/two-factor/recovery-codes",
    "/settings/{org_id}/security",
    "/settings/{org_id}/keys",
    "/settings/{org_id}/keys/new",
    "/settings/{org_id}/keys/{key_id}/rotate",
    "/settings/{org_id}/keys/{key_id}/revoke",
    "/settings/{org_id}/keys/{key_id}/shown",
    "/settings/{org_id}/webhooks",
    "/settings/{org_id}/webhooks/new",
    "/settings/{org_id}/webhooks/{sub_id}/edit",
    "/settings/{org_id}/webhooks/{sub_id}/delete",
    "/settings/{org_id}/webhooks/{sub_id}/rotate-secret",
    "/settings/{org_id}/webhooks/{sub_id}/shown",
    "/settings/{org_id}/webhooks/{sub_id}/deliveries",
    "/settings/{org_id}/audit-log",
    "/docs",
    "/docs/events.json",
    "/docs/events/{event}.schema.json",
    "/changelog",
    "/changelog.rss",
)
PUBLIC_API = "/api/v1/external/"
METRICS_TOKEN = secrets.token_urlsafe(32)  # the served wheel's /metrics, scraped with it
MAX_CRAWL = 200  # same-origin links followed from the pages, at most


class SmokeFailed(Exception):
    pass


def say(message: str) -> None:
    print(message, flush=True)


@contextmanager
def step(title: str) -> Iterator[None]:
    started = time.monotonic()
    say(f"== {title}")
    yield
    say(f"   ({time.monotonic() - started:.1f} s)")


def run(
    command: list[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """stdout of a command that must succeed within `timeout` seconds."""
    done = subprocess.run(  # noqa: S603 - our own commands
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise SmokeFailed(
            f"{' '.join(command[:4])} ... exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return done.stdout


# --- build and install -------------------------------------------------------------------


def build_wheel(work: Path) -> Path:
    tree, out = work / "sources", work / "dist"
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            # symlinks=True: the package's CHANGELOG.md stays a link to the root file.
            skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
            shutil.copytree(source, tree / name, symlinks=True, ignore=skip)
        else:
            shutil.copy2(source, tree / name)
    # A copy, so that no build/ in the checkout adds or hides a file; the PEP 517 hook that
    # `pip wheel` calls, run by this environment's pinned setuptools.
    build = f"from setuptools import build_meta; build_meta.build_wheel({str(out)!r})"
    run([sys.executable, "-c", build], cwd=tree, timeout=300)
    (wheel,) = out.glob("hangar-*.whl")
    return wheel


def install(work: Path, wheel: Path) -> Path:
    """The container image's install (deploy/container/install.sh, which the Dockerfile runs)
    and docs/operators/install.md's production install alike: a fresh environment holding the
    release's lock (every dependency pinned with hashes, wheels only), then the wheel alone."""
    venv, release = work / "venv", work / "release"
    release.mkdir()
    shutil.copy2(wheel, release)
    shutil.copy2(PRODUCTION_LOCK, release)
    env = os.environ | {"PYTHON": sys.executable}
    run(["sh", str(INSTALL_SCRIPT), str(venv), str(release)], env=env, timeout=900)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    listed = json.loads(run([*pip, "list", "--format=json"], timeout=120))
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    say(f"   {venv}: {len(listed)} packages (hangar and pip among them), {size / 1e6:.0f} MB")
    return venv


# --- the installed command -----------------------------------------------------------------


@dataclass
class Fixture:
    org_id: str = ""
    key: str = ""
    key_id: str = ""
    invitation_token: str = ""
    reset_token: str = ""
    sub_id: str = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(venv: Path, run_dir: Path, port: int) -> dict[str, str]:
    # Nothing of the checkout or of ./dev's environment leaks in: only the fresh venv.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HANGAR_", "PYTHON", "VIRTUAL_ENV"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HANGAR_DATABASE_URL"] = f"sqlite:///{run_dir / 'hangar.db'}"
    env["HANGAR_PUBLIC_URL"] = f"http://127.0.0.1:{port}"
    env["HANGAR_METRICS_TOKEN"] = METRICS_TOKEN
    return env


def prepare(hangar: str, run_dir: Path, env: dict[str, str], version: str) -> Fixture:
    def cli(*args: str) -> str:
        return run([hangar, *args], cwd=run_dir, env=env, timeout=120)

    def created(*args: str) -> dict[str, str]:
        found: dict[str, str] = json.loads(cli(*args).strip().splitlines()[-1])
        return found

    printed = cli("--version").strip()
    say(f"   hangar --version: {printed}")
    if printed != f"hangar {version}":
        raise SmokeFailed(f"`hangar --version` says {printed!r}; the wheel is {version}")
    cli("db", "upgrade")
    made = Fixture()
    made.org_id = created("org", "create", "--name", "Smoke Test Aero")["id"]
    org = ["--org", made.org_id]
    created(
        "user", "create", *org, "--email", EMAIL, "--role", "admin", "--password", PASSWORD,
        "--first-name", "Smoke", "--last-name", "Admin",
    )  # fmt: skip
    scopes = [arg for scope in SCOPES for arg in ("--scope", scope)]
    key = created("key", "create", *org, "--name", "smoke", *scopes)
    made.key, made.key_id = key["key"], key["id"]
    cli(
        "seed", *org, "--aircraft", "3", "--members", "4", "--reservations", "12",
        "--squawks", "3", "--maintenance-logs", "3", "--work-orders", "3",
    )  # fmt: skip
    invited = created("member", "invite", *org, "--email", "new@smoke.example", "--role", "member")
    made.invitation_token = invited["invitation_url"].rstrip("/").rsplit("/", 1)[1]
    # A recovery link for the admin, opened (not used): the page must answer.
    reset = created("user", "reset-password", "--email", EMAIL)
    made.reset_token = reset["reset_url"].rstrip("/").rsplit("/", 1)[1]
    return made


@contextmanager
def serving(hangar: str, run_dir: Path, env: dict[str, str], port: int) -> Iterator[str]:
    base = f"http://127.0.0.1:{port}"
    log = (run_dir / "server.log").open("wb")
    server = subprocess.Popen(  # noqa: S603 - the installed command
        [hangar, "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=run_dir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopping it stops all of it
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # until it answers: a poll for readiness, bounded
            if server.poll() is not None:
                raise SmokeFailed(f"hangar serve exited {server.returncode} while starting")
            try:
                with urllib.request.urlopen(f"{base}/api/health", timeout=2):  # noqa: S310
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SmokeFailed("hangar serve did not answer within 60 s") from None
                time.sleep(0.2)
        yield base
    finally:
        stop(server)
        log.close()


def stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is not None:
        return
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=15)
    except ProcessLookupError:
        pass


# --- requests ------------------------------------------------------------------------------


class Links(html.parser.HTMLParser):
    """Same-origin links (href, src), and the hidden CSRF field and checkboxes of a form."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.fields: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in ("href", "src"):
            target = found.get(name) or ""
            if target.startswith("/") and not target.startswith("//"):
                self.links.append(target.split("#")[0])
        if tag == "input" and found.get("name"):
            self.fields.setdefault(str(found["name"]), []).append(found.get("value") or "")


@dataclass
class Browser:
    base: str
    jar: http.cookiejar.CookieJar = field(default_factory=http.cookiejar.CookieJar)
    seen: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)

    def request(
        self, path: str, *, form: dict[str, list[str]] | None = None, bearer: str = ""
    ) -> tuple[int, bytes]:
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        data = urllib.parse.urlencode(form, doseq=True).encode() if form is not None else None
        request = urllib.request.Request(self.base + path, data=data)  # noqa: S310
        if bearer:
            request.add_header("Authorization", f"Bearer {bearer}")
        method = "POST" if form is not None else "GET"
        try:
            with opener.open(request, timeout=30) as response:
                status, body, kind = response.status, response.read(), response.headers
                landed = response.url.removeprefix(self.base)
        except urllib.error.HTTPError as refused:
            status, body, kind = refused.code, refused.read(), refused.headers
            landed = path
        # Redirects are followed (a 3xx is fine when it leads to a 2xx); say where it led.
        shown = shorten(path) + (f" -> {shorten(landed)}" if landed != path else "")
        say(f"   {status} {method} {shown}")
        self.seen[f"{method} {path}"] = status
        if not 200 <= status < 400:
            self.failed.append(f"{status} {method} {path}: {body[:300]!r}")
        elif "text/html" in kind.get("content-type", ""):
            self.pages.append(body.decode("utf-8", "replace"))
        return status, body

    def get(self, path: str, bearer: str = "") -> bytes:
        return self.request(path, bearer=bearer)[1]

    def form_of(self, path: str) -> dict[str, list[str]]:
        parser = Links()
        parser.feed(self.get(path).decode("utf-8", "replace"))
        return parser.fields

    def post_back(self, path: str, served: dict[str, list[str]], **fields: list[str]) -> None:
        """Posts the form `served` (form_of `path`) back: its CSRF token and `fields`."""
        self.request(path, form={"csrf_token": served["csrf_token"], **fields})

    def crawl(self) -> None:
        """Every same-origin link of every page seen so far, and of the pages they lead to."""
        done = {key.split(" ", 1)[1] for key in self.seen if key.startswith("GET ")}
        followed = 0
        while self.pages and followed < MAX_CRAWL:
            parser = Links()
            parser.feed(self.pages.pop())
            for link in parser.links:
                if link and link not in done and followed < MAX_CRAWL:
                    done.add(link)
                    followed += 1
                    self.get(link)


def shorten(path: str) -> str:
    # Ids in full are noise, and the feed's token is a key: neither belongs in a CI log.
    path = re.sub(r"token=[^&]+", "token=...", path)
    path = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{6}", "...", path)
    return re.sub(r"/(invitations|password-reset)/[A-Za-z0-9_-]{20,}", r"/\1/...", path)


def fill(route: str, made: Fixture) -> list[str]:
    values = {
        "org_id": made.org_id,
        "key_id": made.key_id,
        "sub_id": made.sub_id,
        "event": "reservation.cancelled",
        "token": made.reset_token
        if route.startswith("/password-reset/")
        else made.invitation_token,
    }
    if route == "/static/{name}":
        return []  # whatever the pages link to, found by the crawl (and checked there)
    path = route
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    return [path]


def exercise(base: str, made: Fixture, version: str) -> Browser:
    browser = Browser(base)
    doc = json.loads(browser.get("/api/v1/external/openapi.json"))
    if doc["info"]["version"] != version:
        raise SmokeFailed(f"OpenAPI info.version is {doc['info']['version']}; the wheel {version}")
    operations = [(path, op) for path, ops in doc["paths"].items() for op in ops]
    if len(operations) != 9 or {op for _, op in operations} != {"get"}:
        raise SmokeFailed(f"the public API should be 9 GET operations, not {operations}")
    for path, _ in operations:
        if path.endswith(".ics"):
            browser.get(f"{path}?token={urllib.parse.quote(made.key)}")
        else:
            browser.get(path, bearer=made.key)

    # Sign in through the form, as a person does; the session cookie does the rest.
    login = browser.form_of("/login")
    browser.post_back("/login", login, next=["/settings"], email=[EMAIL], password=[PASSWORD])
    # The two forms whose answers are pages of their own (a key, a secret shown once).
    settings = f"/settings/{made.org_id}"
    key_form = browser.form_of(f"{settings}/keys/new")
    browser.post_back(
        f"{settings}/keys/new", key_form, name=["smoke form"], scopes=["read:aircraft"]
    )
    hook_form = browser.form_of(f"{settings}/webhooks/new")
    last_event = hook_form["events"][-1:]
    browser.post_back(
        f"{settings}/webhooks/new", hook_form, name=["smoke"], url=[WEBHOOK_URL], events=last_event
    )
    subs = json.loads(browser.get(f"/api/orgs/{made.org_id}/webhooks"))
    listed = subs["data"] if isinstance(subs, dict) else subs
    made.sub_id = str(listed[0]["id"])

    for route in GET_ROUTES:
        for path in fill(route, made):
            if path.startswith(PUBLIC_API) and path != "/api/v1/external/openapi.json":
                continue  # requested above, with the key
            browser.get(path, bearer=METRICS_TOKEN if path == "/metrics" else "")
    browser.crawl()
    return browser


# --- backup and restore --------------------------------------------------------------------


def backup_and_restore(hangar: str, run_dir: Path, env: dict[str, str], made: Fixture) -> None:
    """`hangar backup` of the served database, `hangar restore` into a new SQLite file, and
    that file served: its aircraft are the original's."""
    aircraft = "/api/v1/external/aircraft"
    backup = run_dir / "backup.tar"
    with serving(hangar, run_dir, env, int(env["HANGAR_PUBLIC_URL"].rsplit(":", 1)[1])) as base:
        served = Browser(base)
        before = served.get(aircraft, bearer=made.key)
        printed = json.loads(
            run([hangar, "backup", str(backup)], cwd=run_dir, env=env, timeout=120)
        )
    say(f"   hangar backup: {printed['size']} bytes of database at revision {printed['revisions']}")
    restored = run_dir / "restored"
    restored.mkdir(mode=0o700)
    # The key is not in the backup: the operator keeps it apart and puts it back beside the file.
    shutil.copy2(run_dir / "hangar.db.secret", restored / "hangar.db.secret")
    port = free_port()
    restored_env = env | {
        "HANGAR_DATABASE_URL": f"sqlite:///{restored / 'hangar.db'}",
        "HANGAR_PUBLIC_URL": f"http://127.0.0.1:{port}",
    }
    done = json.loads(
        run([hangar, "restore", str(backup)], cwd=restored, env=restored_env, timeout=120)
    )
    say(f"   hangar restore: webhook secrets {done['webhook_secrets']}")
    if done["webhook_secrets"] != "readable":
        raise SmokeFailed("the restored database's webhook secrets do not open with its key")
    with serving(hangar, restored, restored_env, port) as base:
        again = Browser(base)
        after = again.get(aircraft, bearer=made.key)
    failed = served.failed + again.failed
    if failed or json.loads(after) != json.loads(before):
        raise SmokeFailed(
            f"the restored database answers otherwise ({restored / 'server.log'}): "
            f"{failed or after[:300]!r}"
        )


# --- a rolling restart -----------------------------------------------------------------------


def rolling_restart_behind_nginx(
    hangar: str, run_dir: Path, env: dict[str, str], made: Fixture
) -> None:
    """Two instances of the installed `hangar serve --no-worker` on this database, behind
    deploy/'s nginx, each restarted in turn (SIGTERM) while four signed-in clients read and
    write through nginx: none of their requests may fail or take more than a second. The
    rolling itself is scripts/rolling_restart.py, which tests/operations/test_rolling_restart.py
    runs with PostgreSQL, Redis and `--workers 2`; here on SQLite, one process each."""
    import asyncio

    import httpx
    import trustme

    sys.path.insert(0, str(ROOT))
    from scripts.rolling_restart import Instance, rolling_restart
    from tests.fixtures.deploy import NGINX, running_site

    if NGINX is None:
        say("   nginx is not installed: no rolling restart (.ci/run installs it)")
        return
    where = run_dir / "rolling"
    where.mkdir()
    ports = [free_port(), free_port()]
    instances = [
        Instance(
            [hangar, "serve", "--no-worker", "--host", "127.0.0.1", "--port", str(port)],
            env,
            run_dir,
            where / f"serve-{port}.log",
            port,
        )
        for port in ports
    ]

    async def roll() -> str:
        try:
            for instance in instances:
                await instance.start()
            async with running_site(where, trustme.CA(), ports) as site:
                async with httpx.AsyncClient(base_url=site.base, verify=site.client_ssl) as c:
                    signed_in = await c.post(
                        "/api/session", json={"email": EMAIL, "password": PASSWORD}
                    )
                    signed_in.raise_for_status()
                    csrf, cookies = signed_in.json()["csrf_token"], c.cookies
                    planes = await c.get(
                        "/api/v1/external/aircraft", headers={"Authorization": f"Bearer {made.key}"}
                    )
                    planes.raise_for_status()
                    plane = planes.json()[0]["id"]
                body = {"aircraft_id": plane, "description": "Oil leak", "severity": "minor"}

                def client() -> httpx.AsyncClient:
                    return httpx.AsyncClient(
                        base_url=site.base,
                        verify=site.client_ssl,
                        timeout=30,
                        cookies=cookies,
                        headers={"X-CSRF-Token": csrf},
                    )

                async def read(c: httpx.AsyncClient) -> httpx.Response:
                    return await c.get(f"/api/orgs/{made.org_id}/webhooks")

                async def write(c: httpx.AsyncClient) -> httpx.Response:
                    return await c.post(f"/api/orgs/{made.org_id}/squawks", json=body)

                result = await rolling_restart(
                    instances, client, [read, write, read], where / "access.log"
                )
        finally:
            for instance in instances:
                await instance.kill()
        if result.failed or result.stalled:
            lines = [str(c) for c in (*result.failed, *result.stalled)][:20]
            raise SmokeFailed(f"rolling restart: {result.summary()}\n" + "\n".join(lines))
        return result.summary()

    say(f"   {asyncio.run(roll())}")


# --- the whole run -------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hangar-smoke-"))
    started = time.monotonic()
    try:
        with step("build the wheel"):
            wheel = build_wheel(work)
            version = wheel.name.split("-")[1]
            say(f"   {wheel.name}")
        with step("install it and its pinned dependencies into a fresh environment"):
            venv = install(work, wheel)
        hangar = str(venv / "bin" / "hangar")
        run_dir = work / "run"
        run_dir.mkdir()
        port = free_port()
        env = environment(venv, run_dir, port)
        with step("an organization, an admin, a key, rows and an invitation, by the CLI"):
            made = prepare(hangar, run_dir, env, version)
        with step(f"hangar serve on 127.0.0.1:{port}, every route and every linked file"):
            try:
                with serving(hangar, run_dir, env, port) as base:
                    browser = exercise(base, made, version)
            finally:
                log = run_dir / "server.log"
                errors = [line for line in log.read_text().splitlines() if "Traceback" in line]
        if not (browser.failed or errors):
            with step("hangar backup while served, hangar restore into a new file, served"):
                backup_and_restore(hangar, run_dir, env, made)
            with step("two instances behind nginx, restarted one by one under load"):
                rolling_restart_behind_nginx(hangar, run_dir, env, made)
        if browser.failed or errors:
            say("FAILED:")
            for line in browser.failed:
                say(f"   {line}")
            say(f"server log ({log}):\n" + "\n".join(log.read_text().splitlines()[-40:]))
            return 1
        say(
            f"OK: {len(browser.seen)} requests, all 2xx/3xx, from {wheel.name} installed in a "
            f"fresh environment ({time.monotonic() - started:.0f} s)"
        )
        return 0
    except (SmokeFailed, subprocess.TimeoutExpired, KeyError, ValueError) as exc:
        say(f"FAILED: {exc.__class__.__name__}: {exc}")
        log = work / "run" / "server.log"
        if log.exists():
            say(f"server log ({log}):\n" + "\n".join(log.read_text().splitlines()[-40:]))
        return 1
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
