"""hangar: the integration surface of a flight-school operations product."""

# The one version number: the package's (pyproject.toml reads it from here), `hangar
# --version`, and the public API's `info.version`, which service-spec.md fixes at 1.1.0.
# CHANGELOG.md's top entry names it too (tests/test_version.py).
__version__ = "1.1.0"
