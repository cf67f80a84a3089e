"""The audit log: who did what to an organization's settings, from where, and when.

Every admin action (API keys, webhook subscriptions, members, the organization's own
settings, the operator's account commands) and the one thing hangar does to a setting on
its own (disabling a webhook after five failures in a row) writes one entry, in the
action's own transaction: an action that rolls back leaves no entry, and no entry stands
for an action that did not happen. `GET /api/orgs/{org_id}/audit-log` and the screen
`/settings/{org_id}/audit-log` read them, newest first; the retention job prunes them after
HANGAR_AUDIT_RETENTION_DAYS (default 365).

An entry keeps the actor's email as it was, beside the account's id: it answers "who"
after the account changes its address or leaves the organization, as GitHub's and
Stripe's logs do. No secret ever enters one (commands.record refuses the names secrets go
by, and tests/audit scans every entry for the secrets the actions issued).
"""
