"""a disabled subscription's failure counter says the rule's 5

Before 1.5.0 the deliveries still in flight when the fifth consecutive failure disabled a
subscription went on counting, so a disabled subscription could read 6, 7 or more. The
recorder now counts only while a subscription is enabled; this brings the counters it left
behind to what the rule says. An enabled subscription's counter is below 5 and is not touched.

The way back changes nothing: 5 is a value the old code wrote too.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"

# service-spec.md: five consecutive failed deliveries disable a subscription.
DISABLE_AFTER = 5


def upgrade() -> None:
    op.execute(
        sa.text(
            "UPDATE webhook_subscriptions SET consecutive_failures = :cap "
            "WHERE consecutive_failures > :cap AND NOT enabled"
        ).bindparams(cap=DISABLE_AFTER)
    )


def downgrade() -> None:
    pass
