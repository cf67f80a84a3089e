"""The metrics tests deliver to real HTTPS receivers on loopback (tests/fixtures/receivers.py)."""

from tests.fixtures.receivers import ca, empty_queue, receiver, sender  # noqa: F401
