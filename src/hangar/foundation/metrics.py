"""Every Prometheus metric hangar keeps (the middleware that counts requests is
hangar.http.request_metrics).

The metrics are prometheus-client's, in its default registry. Under `hangar serve --workers
N` the supervisor gives every process one PROMETHEUS_MULTIPROC_DIR (hangar.cli.processes),
and the library keeps each process's values in files there that any server process adds up
when scraped (hangar.http.metrics_endpoint); a single process without the variable keeps
them in memory.
The library picks its mode when it is first imported, from the environment: the variable
must be set before the process starts, which is why the supervisor sets it and its spawned
children inherit it.

Label values are bounded: `operation` is a route's path template (or `unmatched`), `event`
one of the 13 events (or `test.ping`, `other`), `outcome`, `result`, `component`, `table`
and `code` values fixed in the code. The facts of the database (the queue's depth, the oldest due
delivery's age, the subscriptions now disabled) are not kept here:
hangar.http.metrics_endpoint reads them at each scrape, so whichever process answers tells the same.
"""

from __future__ import annotations

from typing import Literal

from prometheus_client import Counter, Gauge, Histogram

# The variable that puts prometheus-client in multiprocess mode (see above).
MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"

# --- requests -----------------------------------------------------------------------------

REQUESTS = Counter(
    "hangar_http_requests",
    "HTTP requests answered by the app, by operation (route template), method and status",
    ["operation", "method", "status"],
)
REQUEST_DURATION = Histogram(
    "hangar_http_request_duration_seconds",
    "Time from a request reaching the app to its response's last byte, by operation and method",
    ["operation", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
REFUSALS = Counter(
    "hangar_http_refusals",
    "401, 403 and 429 answers of the API, by status and the body's error code",
    ["status", "code"],
)

# --- webhooks -----------------------------------------------------------------------------

AttemptOutcome = Literal[
    "succeeded",  # a 2xx answer
    "http_error",  # any other answer
    "timeout",
    "tls_error",
    "connection_error",
    "url_refused",  # the address check refused the URL at the attempt
    "secret_unreadable",
]
ATTEMPTS = Counter(
    "hangar_webhook_attempts",
    "Delivery attempts made (a POST tried), by event and outcome",
    ["event", "outcome"],
)
DELIVERIES_FINISHED = Counter(
    "hangar_webhook_deliveries_finished",
    "Deliveries that reached a final state: succeeded, failed (attempts spent) or skipped "
    "(subscription disabled or deleted), by event",
    ["event", "status"],
)
FIRST_ATTEMPT_DELAY = Histogram(
    "hangar_webhook_first_attempt_delay_seconds",
    "Time from an event being recorded to the first attempt of a delivery of it",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0),
)
# livesum: the attempts under way in the processes alive now; a dead process's count is
# dropped (hangar.cli.processes marks it dead), not added for ever.
ATTEMPTS_IN_PROGRESS = Gauge(
    "hangar_webhook_attempts_in_progress",
    "Delivery attempts under way",
    multiprocess_mode="livesum",
)
# hangar.webhooks.delivery.dispatcher: attempts that could not be made for hangar's own reason.
# Never counted against the endpoint: the delivery stays pending and is tried again.
HeldReason = Literal[
    "secret_unreadable",  # no key this process holds opens the subscription's secret
    "error",  # anything unexpected (the database refusing the outcome, a bug)
]
DELIVERIES_HELD = Counter(
    "hangar_webhook_deliveries_held",
    "Delivery attempts not made or not recorded for hangar's own reason (the delivery stays "
    "pending, not counted against the endpoint), by reason: secret_unreadable, error",
    ["reason"],
)
SUBSCRIPTIONS_AUTO_DISABLED = Counter(
    "hangar_webhook_subscriptions_auto_disabled",
    "Subscriptions disabled automatically after consecutive failed deliveries",
)
# hangar.webhooks.delivery.alerts: each notice the worker's `webhook-alerts` job took up. Not the
# postponed ones (a mail went out for the subscription within the day): they come back.
DisabledNoticeOutcome = Literal[
    "sent",  # mailed to the organization's admins (to at least one of them)
    "failed",  # to none of them: the mail server refused or could not be reached; retried
    "dropped",  # not needed any more (enabled or deleted since), or no mail or no admin
]
DISABLED_NOTICES = Counter(
    "hangar_webhook_disabled_notices",
    "Notices that a webhook subscription was disabled, mailed to its organization's admins, "
    "by outcome: sent, failed (retried later), dropped (enabled or deleted since, no mail "
    "configured, no admin)",
    ["outcome"],
)

# --- the scheduler ------------------------------------------------------------------------

SCHEDULER_TICKS = Counter("hangar_scheduler_ticks", "Per-minute scheduler ticks run")
JOB_RUNS = Counter(
    "hangar_scheduler_job_runs",
    "Scheduled jobs by result: ok, failed, or skipped (another worker had the minute)",
    ["job", "result"],
)

# --- retention ----------------------------------------------------------------------------

# By table: webhook_deliveries, webhook_attempts, webhook_redeliveries, events,
# webhook_previous_secrets (secrets past their grace, erased from their rows),
# webhook_recoveries, sessions, invitations (hangar.retention.job.TABLES).
RETENTION_PRUNED = Counter(
    "hangar_retention_rows_pruned",
    "Rows deleted by retention (past HANGAR_DELIVERY_RETENTION_DAYS, or expired), by table",
    ["table"],
)

# --- datastores ---------------------------------------------------------------------------

DATABASE_ERRORS = Counter(
    "hangar_database_errors",
    "Database errors (unreachable, or refused statements), by component: api, dispatcher, "
    "scheduler, metrics",
    ["component"],
)
# hangar.db.engine: SQLAlchemy's pools of every live process, summed (the API's read pool on
# PostgreSQL is asyncpg's own, not counted here). Waiting that lasts means the pool is too
# small for the load, or the database too slow to give connections back.
DB_CONNECTIONS_IN_USE = Gauge(
    "hangar_database_connections_in_use",
    "Connections taken from hangar's database pools and not yet given back",
    multiprocess_mode="livesum",
)
DB_CONNECTIONS_WAITING = Gauge(
    "hangar_database_connections_waiting",
    "Requests and tasks waiting for a connection from hangar's database pools",
    multiprocess_mode="livesum",
)
REDIS_ERRORS = Counter(
    "hangar_redis_errors",
    "Redis calls of the rate limiter that failed or timed out (the limits then count in-process)",
)
# livemin: 0 as soon as one live process saw Redis fail; a process without HANGAR_REDIS_URL
# never sets it (0 there too: nothing to reach). Set by the rate limiter at each outcome that
# changes it and by the health probes (hangar.http.health).
REDIS_UP = Gauge(
    "hangar_redis_up",
    "1 while Redis answers this process, 0 once a call to it failed or timed out (the rate "
    "limits then count in-process) until one answers again",
    multiprocess_mode="livemin",
)
