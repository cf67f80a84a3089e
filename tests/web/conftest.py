"""The page tests share `two_links` (one new email invited by both organizations) and, for
the browser tests, the live server and the loopback HTTPS receiver it delivers to."""

from tests.fixtures.browser import live  # noqa: F401
from tests.fixtures.invites import two_links  # noqa: F401
from tests.fixtures.receivers import ca, receiver  # noqa: F401
