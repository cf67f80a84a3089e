"""The command-line tests share `cli`: one fresh database, upgraded and with one organization,
per module."""

from tests.fixtures.cli import cli  # noqa: F401
