"""The log tests deliver to the real HTTPS receivers of tests/fixtures/receivers.py."""

from tests.fixtures.receivers import ca, empty_queue, receiver  # noqa: F401
