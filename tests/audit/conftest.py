"""The audit log's tests: a real HTTPS receiver on loopback for the actions that deliver
(Redeliver, a webhook disabled after five failures), as the delivery tests have."""

from tests.fixtures.receivers import ca, empty_queue, receiver, sender  # noqa: F401
from tests.fixtures.webhooks import hooks  # noqa: F401
