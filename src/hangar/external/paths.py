"""Where the public API lives: its routes mount here, and the screens link here (the
calendar feed's URL) without importing the routes."""

from __future__ import annotations

PREFIX = "/api/v1/external"
FEED_PATH = f"{PREFIX}/reservations.ics"
