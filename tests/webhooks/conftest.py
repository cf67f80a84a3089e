"""Delivery tests get a real HTTPS receiver on loopback (see tests/fixtures/receivers.py)
and a queue of their own; `hooks` bundles them with the test's organization and clock."""

from tests.fixtures.receivers import ca, empty_queue, receiver, sender  # noqa: F401
from tests.fixtures.webhooks import hooks  # noqa: F401
