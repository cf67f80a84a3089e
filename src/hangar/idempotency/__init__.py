"""Idempotency keys: a management POST sent again with the same `Idempotency-Key` is answered
with its first answer, not done twice (Stripe's rules; interfaces.md §9).

- `models`: the one table, `idempotency_keys`, one row per (organization, account, key).
- `claims`: the statements: claim a key (its own short transaction, before the action's),
  keep the answer once the action committed, or let the key go.
- `replay`: the face: the key's rules, the request's fingerprint, the answer sealed at rest,
  and retention's batches. The HTTP side (the header, the answer replayed) is
  hangar.http.idempotency.
"""
