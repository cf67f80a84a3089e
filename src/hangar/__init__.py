"""hangar: the integration surface of a flight-school operations product."""

# The one version number: the package's (pyproject.toml reads it from here), `hangar
# --version`, and the public API's `info.version`. service-spec.md fixed 1.1.0; 1.2.0 added to
# it (the feed's conditional requests, the delivery log's fields and Redeliver), and 1.3.0 to
# the operator's side alone (backups, key rotation, logs), 1.4.0 the events API and the
# Standard Webhooks headers, 1.5.0 HEAD, secret rotation and the paged delivery log: nothing
# is ever taken away.
# CHANGELOG.md's top entry names it too (tests/test_version.py).
__version__ = "1.5.0"
