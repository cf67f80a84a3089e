"""Access logging for `hangar serve`: uvicorn's own format, minus credentials.

The calendar feed takes the full API key in `?token=` (calendar clients cannot send headers),
and uvicorn's access line includes the query string: without this, every feed poll would
write a live key into the log.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

_CREDENTIAL = re.compile(r"([?&]token=)[^&#\s]*", re.IGNORECASE)


def redact(text: str) -> str:
    return _CREDENTIAL.sub(r"\1[redacted]", text)


class RedactCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        record.msg = redact(str(record.msg))
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's default logging config with the redacting filter on the access handler."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_credentials"] = {"()": RedactCredentials}
    config["handlers"]["access"].setdefault("filters", []).append("redact_credentials")
    return config
