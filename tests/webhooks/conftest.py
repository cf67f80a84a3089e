"""Delivery tests get a real HTTPS receiver on loopback (see tests/fixtures/receivers.py)
and a queue of their own."""

from tests.fixtures.receivers import ca, empty_queue, receiver, sender  # noqa: F401
