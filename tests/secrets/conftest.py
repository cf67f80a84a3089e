"""Key rotation tests deliver to a real HTTPS receiver on loopback (tests/fixtures/receivers.py)
and reseal in a database of their own (tests/fixtures/key_rotation.py)."""

from tests.fixtures.key_rotation import own_engine  # noqa: F401
from tests.fixtures.receivers import ca, empty_queue, receiver, sender  # noqa: F401
