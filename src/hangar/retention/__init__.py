"""Retention: storage bounded by time, not by the age of the install.

Each minute, once per cluster (the scheduler's `retention` job), rows past their use are
deleted, oldest first, in small batches:

- finished deliveries (succeeded, failed, skipped) whose `completed_at` is older than
  HANGAR_DELIVERY_RETENTION_DAYS, with their attempts and redeliveries. A pending delivery is
  never touched, however old: a redelivered one is pending again, and goes only once it has
  finished again and that finish is past the window;
- events older than the window that no delivery refers to;
- sessions past their absolute expiry, and invitations a week past theirs;
- the webhook secrets a rotation replaced, once their grace has ended (erased from their
  subscriptions, not deleted with them).
- audit log entries older than HANGAR_AUDIT_RETENTION_DAYS (default 365).
- idempotency keys (and the answers kept for them) a day after they were claimed.

Each feature makes the batches of its own tables (hangar.webhooks.delivery.pruning, and `expired`
in hangar.auth.sessions, hangar.orgs.invitations, hangar.audit and hangar.idempotency; a
batch is a short transaction on an index, hangar.kit.batches); `job` takes turns between
them within a time budget, pausing between batches so deliveries, claims and the product's
writes are never held up.
"""

from __future__ import annotations

from hangar.retention.job import prune

__all__ = ["prune"]
