"""Settings, read once from HANGAR_* environment variables (interfaces.md §1)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from hangar.foundation.smtp_settings import is_one_sender, smtp_url_problem
from hangar.foundation.sqlite_files import private_sqlite, secret_beside, sqlite_path

DEFAULT_DATABASE_URL = "sqlite:///./hangar.db"
DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"
LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
LogLevel = Literal["debug", "info", "warning", "error"]
LOG_LEVELS: tuple[LogLevel, ...] = ("debug", "info", "warning", "error")
# As long as HANGAR_SECRET_KEY's minimum: a bearer token anyone can read metrics with must be
# as unguessable as a key (`secrets.token_urlsafe(32)` gives 43 characters).
MIN_METRICS_TOKEN_LENGTH = 32
# Finished deliveries (with their attempts and redeliveries) and the events no delivery refers
# to are kept this many days, then pruned: the window Stripe and GitHub keep webhook logs for.
DEFAULT_DELIVERY_RETENTION_DAYS = 30
# Ten years: past that, "retention" means "never prune", which this setting does not offer.
MAX_DELIVERY_RETENTION_DAYS = 3650
# The audit log's entries are kept a year, then pruned: long enough to answer "who changed
# this, and when?" about last season, as GitHub keeps an organization's log for 180 days
# (a year through its API on Enterprise); at most ten years, as above.
DEFAULT_AUDIT_RETENTION_DAYS = 365
MAX_AUDIT_RETENTION_DAYS = 3650
# Live webhook subscriptions an organization may have. Each is a destination the dispatcher
# shares its slots with, so without a bound one tenant could subscribe hundreds of dead
# endpoints and crowd the others out (issue 39); 20 is GitHub's number per event per
# repository or organization, and far more than a flight school wires up.
DEFAULT_MAX_SUBSCRIPTIONS_PER_ORG = 20
MOST_SUBSCRIPTIONS_PER_ORG = 1000
DEFAULT_DB_POOL_SIZE = 10
MOST_DB_POOL_SIZE = 100
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# The proxy of deploy/ (nginx on the same machine) reaches hangar from loopback.
# nginx on the same machine, over IPv4 or IPv6 loopback (an IPv4-mapped peer is matched as
# the IPv4 address it carries: hangar.http.client_address).
DEFAULT_TRUSTED_PROXIES: tuple[Network, ...] = (
    ipaddress.ip_network("127.0.0.1/32"),
    ipaddress.ip_network("::1/128"),
)


class ConfigError(Exception):
    """A setting is missing or malformed; the message says which and how to fix it."""


@dataclass(frozen=True)
class Settings:
    # Secrets, and URLs that may hold a password, stay out of repr: a Settings printed in a
    # traceback or a test's failure must not show them.
    database_url: str = field(repr=False)
    secret_key: str = field(repr=False)
    public_url: str = DEFAULT_PUBLIC_URL
    service_domain: str = "127.0.0.1"
    redis_url: str | None = field(default=None, repr=False)
    # Namespaces Redis keys so test runs (or two deployments on one Redis) never meet.
    redis_prefix: str = "hangar"
    # GET /metrics answers only a bearer of this token; unset, it is not served at all.
    metrics_token: str | None = field(default=None, repr=False)
    log_format: LogFormat = "text"
    log_level: LogLevel = "info"
    delivery_retention_days: int = DEFAULT_DELIVERY_RETENTION_DAYS
    audit_retention_days: int = DEFAULT_AUDIT_RETENTION_DAYS
    # Creating one more live (not deleted) subscription is refused: 422 SUBSCRIPTION_LIMIT.
    max_subscriptions_per_org: int = DEFAULT_MAX_SUBSCRIPTIONS_PER_ORG
    # Each process's database pool (hangar.wiring.container): writes, and reads on PostgreSQL.
    db_pool_size: int = DEFAULT_DB_POOL_SIZE
    # Peers whose X-Forwarded-For (or X-Real-IP) names the client (hangar.http.client_address).
    trusted_proxies: tuple[Network, ...] = DEFAULT_TRUSTED_PROXIES
    # Both or neither (mail_settings): set, invitation and password-reset links are mailed to
    # their person instead of being shown to whoever asked for them (hangar.foundation.mail).
    smtp_url: str | None = field(default=None, repr=False)
    mail_from: str | None = None
    # Keys accepted besides the current one during a rotation (HANGAR_SECRET_KEY_PREVIOUS):
    # what they signed still verifies and what they sealed still opens; nothing new is signed
    # or sealed with them.
    previous_secret_keys: tuple[str, ...] = field(default=(), repr=False)

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def log_format(env: Mapping[str, str]) -> LogFormat:
    """HANGAR_LOG_FORMAT: `text` (the default) or `json` (hangar.logs.formats)."""
    value = env.get("HANGAR_LOG_FORMAT") or "text"
    if value not in LOG_FORMATS:
        raise ConfigError(f"HANGAR_LOG_FORMAT must be text or json, not {value!r}")
    return value


def log_level(env: Mapping[str, str]) -> LogLevel:
    """HANGAR_LOG_LEVEL: debug, info (the default), warning or error, in any case
    (hangar.logs.formats says what each shows)."""
    value = (env.get("HANGAR_LOG_LEVEL") or "info").strip().lower()
    for level in LOG_LEVELS:
        if value == level:
            return level
    raise ConfigError(
        f"HANGAR_LOG_LEVEL must be debug, info, warning or error, not {env['HANGAR_LOG_LEVEL']!r}"
    )


def metrics_token(env: Mapping[str, str]) -> str | None:
    """HANGAR_METRICS_TOKEN: unset (no /metrics), or a secret of 32 characters or more. The
    message never quotes the token."""
    token = env.get("HANGAR_METRICS_TOKEN") or None
    if token is not None and len(token) < MIN_METRICS_TOKEN_LENGTH:
        raise ConfigError(
            f"HANGAR_METRICS_TOKEN must be at least {MIN_METRICS_TOKEN_LENGTH} characters, as "
            "unguessable as a key: it alone keeps the metrics from anyone who reaches the "
            "port; make one with "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return token


def _whole_number(
    env: Mapping[str, str], name: str, default: int, most: int, unit: str = ""
) -> int:
    """A setting that is a whole number from 1 to `most` (`default` when unset or empty)."""
    value = (env.get(name) or "").strip()
    if not value:
        return default
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= most:
        raise ConfigError(f"{name} must be a whole number {unit}from 1 to {most}, not {value!r}")
    return int(value)


def delivery_retention_days(env: Mapping[str, str]) -> int:
    """HANGAR_DELIVERY_RETENTION_DAYS: a whole number of days, 1 to 3650 (default 30)."""
    return _whole_number(
        env,
        "HANGAR_DELIVERY_RETENTION_DAYS",
        DEFAULT_DELIVERY_RETENTION_DAYS,
        MAX_DELIVERY_RETENTION_DAYS,
        "of days ",
    )


def audit_retention_days(env: Mapping[str, str]) -> int:
    """HANGAR_AUDIT_RETENTION_DAYS: a whole number of days, 1 to 3650 (default 365)."""
    return _whole_number(
        env,
        "HANGAR_AUDIT_RETENTION_DAYS",
        DEFAULT_AUDIT_RETENTION_DAYS,
        MAX_AUDIT_RETENTION_DAYS,
        "of days ",
    )


def max_subscriptions_per_org(env: Mapping[str, str]) -> int:
    """HANGAR_MAX_SUBSCRIPTIONS_PER_ORG: a whole number from 1 to 1000 (default 20)."""
    return _whole_number(
        env,
        "HANGAR_MAX_SUBSCRIPTIONS_PER_ORG",
        DEFAULT_MAX_SUBSCRIPTIONS_PER_ORG,
        MOST_SUBSCRIPTIONS_PER_ORG,
    )


def db_pool_size(env: Mapping[str, str]) -> int:
    """HANGAR_DB_POOL_SIZE: each process's connections for writes (and as many more at busy
    moments), and on PostgreSQL as many for the API's reads; 1 to 100 (default 10)."""
    return _whole_number(env, "HANGAR_DB_POOL_SIZE", DEFAULT_DB_POOL_SIZE, MOST_DB_POOL_SIZE)


# Settings that hold a secret (or a URL that may hold a password) can come from a file
# instead, as container platforms and systemd's credentials mount them: NAME_FILE=PATH.
FILE_SETTINGS = (
    "HANGAR_DATABASE_URL",
    "HANGAR_REDIS_URL",
    "HANGAR_SECRET_KEY",
    "HANGAR_SECRET_KEY_PREVIOUS",
    "HANGAR_METRICS_TOKEN",
    "HANGAR_SMTP_URL",
)


def with_files(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with each NAME_FILE of FILE_SETTINGS read into NAME: the file's text, without
    the whitespace around it (a file usually ends with a newline). Its content is never
    quoted in an error."""
    read = dict(env)
    for name in FILE_SETTINGS:
        path = env.get(f"{name}_FILE")
        if not path:
            continue
        if env.get(name):
            raise ConfigError(f"{name} and {name}_FILE are both set: keep one of them")
        try:
            value = Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
            raise ConfigError(f"{name}_FILE: cannot read {path}: {why}") from None
        if not value:
            raise ConfigError(f"{name}_FILE: {path} is empty")
        read[name] = value
    return read


def trusted_proxies(env: Mapping[str, str]) -> tuple[Network, ...]:
    """HANGAR_TRUSTED_PROXIES: addresses or CIDRs, comma-separated (default 127.0.0.1,::1); set
    but empty, no peer is trusted and every client is known by its own connection."""
    value = env.get("HANGAR_TRUSTED_PROXIES")
    if value is None:
        return DEFAULT_TRUSTED_PROXIES
    networks = []
    for part in filter(None, (p.strip() for p in value.split(","))):
        try:
            # strict: 10.0.0.1/8 names a host with a mask, most likely a typo for 10.0.0.0/8
            # or 10.0.0.1/32; trusting a whole network by accident is not a guess to make.
            networks.append(ipaddress.ip_network(part, strict=True))
        except ValueError:
            raise ConfigError(
                "HANGAR_TRUSTED_PROXIES must be IP addresses or networks (CIDR, host bits "
                f"zero), comma-separated, such as 127.0.0.1,10.0.0.0/8; not {part!r}"
            ) from None
    return tuple(networks)


MIN_SECRET_KEY_LENGTH = 32


def previous_secret_keys(env: Mapping[str, str], current: str) -> tuple[str, ...]:
    """HANGAR_SECRET_KEY_PREVIOUS: keys accepted besides HANGAR_SECRET_KEY during a rotation
    (the ones it replaced, or the next one rolled in before it is used), comma-separated, each
    as long as a key must be. The messages name a key by its place, never by its value."""
    parts = [part.strip() for part in (env.get("HANGAR_SECRET_KEY_PREVIOUS") or "").split(",")]
    keys = [part for part in parts if part]
    for number, key in enumerate(keys, start=1):
        if len(key) < MIN_SECRET_KEY_LENGTH:
            raise ConfigError(
                f"HANGAR_SECRET_KEY_PREVIOUS: key {number} of {len(keys)} is shorter than "
                f"{MIN_SECRET_KEY_LENGTH} characters; list whole keys, as HANGAR_SECRET_KEY "
                "takes them, comma-separated"
            )
        # Most likely a rotation half done (the old key listed, the new one never set): refused,
        # or the operator would believe the key rotated while it did not.
        if key == current:
            raise ConfigError(
                f"HANGAR_SECRET_KEY_PREVIOUS: key {number} of {len(keys)} is the current key; "
                "set HANGAR_SECRET_KEY to the new key, or take this one out of "
                "HANGAR_SECRET_KEY_PREVIOUS"
            )
    return tuple(dict.fromkeys(keys))  # a key listed twice is tried once


def mail_settings(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """HANGAR_SMTP_URL and HANGAR_MAIL_FROM, both or neither: (smtp_url, mail_from); what each
    may be: hangar.foundation.smtp_settings. Half a setting is refused rather than ignored: an
    operator who set one meant links to go by mail, and silently showing them to admins
    instead would defeat that.
    """
    url = (env.get("HANGAR_SMTP_URL") or "").strip()
    sender = (env.get("HANGAR_MAIL_FROM") or "").strip()
    if not url and not sender:
        return None, None
    for name, value, other in (
        ("HANGAR_SMTP_URL", url, "HANGAR_MAIL_FROM"),
        ("HANGAR_MAIL_FROM", sender, "HANGAR_SMTP_URL"),
    ):
        if not value:
            raise ConfigError(f"{name} is required when {other} is set: set both, or neither")
    wrong = smtp_url_problem(url)
    if wrong is not None:
        raise ConfigError(wrong)
    if not is_one_sender(sender):
        raise ConfigError(
            "HANGAR_MAIL_FROM must be one mail address, such as hangar@example.org or "
            f"'Hangar <hangar@example.org>', not {sender!r}"
        )
    return url, sender


def load_settings(env: dict[str, str] | None = None) -> Settings:
    env = with_files(os.environ if env is None else env)
    database_url = env.get("HANGAR_DATABASE_URL") or DEFAULT_DATABASE_URL
    if not database_url.startswith(("sqlite:///", "postgresql://", "postgres://")):
        raise ConfigError("HANGAR_DATABASE_URL must be sqlite:///PATH or postgresql://user@host/db")
    public_url = (env.get("HANGAR_PUBLIC_URL") or DEFAULT_PUBLIC_URL).rstrip("/")
    host = urlsplit(public_url).hostname
    if not host:
        raise ConfigError(
            "HANGAR_PUBLIC_URL must be an absolute URL such as https://hangar.example"
        )
    db_file = sqlite_path(database_url)
    if db_file is not None:
        private_sqlite(db_file)
    secret_key = env.get("HANGAR_SECRET_KEY", "")
    if not secret_key:
        if db_file is None:
            raise ConfigError(
                "HANGAR_SECRET_KEY is required when the database is not a SQLite file"
            )
        secret_key = secret_beside(db_file)
    if len(secret_key) < MIN_SECRET_KEY_LENGTH:
        raise ConfigError(f"HANGAR_SECRET_KEY must be at least {MIN_SECRET_KEY_LENGTH} characters")
    previous = previous_secret_keys(env, secret_key)
    smtp_url, mail_from = mail_settings(env)
    return Settings(
        database_url=database_url,
        secret_key=secret_key,
        public_url=public_url,
        service_domain=env.get("HANGAR_SERVICE_DOMAIN") or host,
        redis_url=env.get("HANGAR_REDIS_URL") or None,
        redis_prefix=env.get("HANGAR_REDIS_PREFIX") or "hangar",
        metrics_token=metrics_token(env),
        log_format=log_format(env),
        log_level=log_level(env),
        delivery_retention_days=delivery_retention_days(env),
        audit_retention_days=audit_retention_days(env),
        max_subscriptions_per_org=max_subscriptions_per_org(env),
        db_pool_size=db_pool_size(env),
        trusted_proxies=trusted_proxies(env),
        smtp_url=smtp_url,
        mail_from=mail_from,
        previous_secret_keys=previous,
    )
