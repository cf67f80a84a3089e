"""Signatures are not kept: every stored attempt's signature headers lose their values

A stored signature is a delivery anyone who reads the database, or a backup of it, could send
to the receiver again (`X-Service-Signature` covers the body alone, and never goes stale). The
delivery log keeps each signature header's name and shows, in place of its value, that it was
computed when sent (hangar.webhooks.delivery.signing.NOT_KEPT); Redeliver signs when it sends.

Data only, in one statement per dialect over the JSON pairs: the previous release reads and
writes the same columns (an attempt it records during the upgrade is masked when shown), so
its code still works on this schema. The way back restores nothing: the values are gone,
which is the point.

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
# A data change: 0016's code (1.5.0) still works on this schema.
oldest_compatible = "0016"

# As in hangar.webhooks.delivery.signing (NOT_KEPT, SIGNATURE_HEADERS): a migration keeps its own
# copy, so that it means what it meant when written.
NOT_KEPT = "(computed when sent; not kept)"

# An attempt that sent nothing holds SQL NULL or, written through the JSON type, JSON null:
# only arrays are rewritten. (json_agg of no rows is NULL, hence the coalesce.)
_POSTGRESQL = """
UPDATE webhook_attempts AS a
SET request_headers = (
    SELECT coalesce(json_agg(
        CASE WHEN lower(pair->>0)
                  IN ('x-service-signature', 'x-service-signature-previous', 'webhook-signature')
             THEN json_build_array(pair->>0, :note) ELSE pair END
        ORDER BY position), '[]')
    FROM json_array_elements(a.request_headers) WITH ORDINALITY AS pairs(pair, position)
)
WHERE json_typeof(a.request_headers) = 'array'
"""

# json_each walks an array in order, and json_group_array keeps the order it is fed.
_SQLITE = """
UPDATE webhook_attempts
SET request_headers = (
    SELECT json_group_array(
        CASE WHEN lower(json_extract(value, '$[0]'))
                  IN ('x-service-signature', 'x-service-signature-previous', 'webhook-signature')
             THEN json_array(json_extract(value, '$[0]'), :note) ELSE json(value) END)
    FROM json_each(webhook_attempts.request_headers)
)
WHERE json_type(request_headers) = 'array'
"""


def upgrade() -> None:
    statement = _POSTGRESQL if op.get_bind().dialect.name == "postgresql" else _SQLITE
    op.execute(sa.text(statement).bindparams(note=NOT_KEPT))


def downgrade() -> None:
    pass
