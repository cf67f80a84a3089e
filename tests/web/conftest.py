"""The page tests share `two_links` (one new email invited by both organizations) and, for
the browser test, the loopback HTTPS receiver of tests/fixtures/receivers.py."""

from tests.fixtures.invites import two_links  # noqa: F401
from tests.fixtures.receivers import ca, receiver  # noqa: F401
