"""The operations tests run hangar as operators do (real processes, signals, a proxy in
front) and deliver to real HTTPS receivers on loopback (see tests/fixtures/receivers.py)."""

from tests.fixtures.network import silent_port  # noqa: F401
from tests.fixtures.receivers import ca, empty_queue, receiver, sender  # noqa: F401
