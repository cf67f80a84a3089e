"""The public API's tests: a port that never answers plays a hung store
(tests/fixtures/network.py)."""

from tests.fixtures.network import silent_port  # noqa: F401
