"""Access logging for `hangar serve`: uvicorn's own format, minus credentials.

The calendar feed takes the full API key in `?token=` (calendar clients cannot send headers),
and uvicorn's access line includes the raw query string: without this, every feed poll would
write a live key into the log. The server decodes parameter names before it reads them
(`%74oken` is `token`), so redaction decides on the decoded query, never on its spelling.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any
from urllib.parse import unquote_plus

from hangar.auth.key_format import KEY_PREFIX

REDACTED = "[redacted]"
# A key written anywhere in the line, for instance in a path, still never reaches the log.
_LITERAL_KEY = re.compile(re.escape(KEY_PREFIX) + r"[A-Za-z0-9_\-]*")
# An invitation link carries its token in the path (/invitations/<token>, and the same under
# /api/): uvicorn logs the path re-quoted from its decoded form, so this spelling is the one.
_INVITATION_TOKEN = re.compile(r"(/invitations/)[^/?#\s]+")


def _secret_param(name: str, value: str) -> bool:
    # casefold: a client spelling it TOKEN meant the same thing, whether or not it worked.
    return unquote_plus(name).strip().casefold() == "token" or KEY_PREFIX in unquote_plus(value)


def redact(text: str) -> str:
    """`text` with the value of every `token` parameter, any key, and any invitation token
    replaced."""
    text = _LITERAL_KEY.sub(REDACTED, text)
    text = _INVITATION_TOKEN.sub(lambda m: m[1] + REDACTED, text)
    path, question, query = text.partition("?")
    if not question:
        return text
    # The query ends at the first space: what follows is the rest of a formatted log line.
    query, space, tail = query.partition(" ")
    params = []
    for param in query.split("&"):
        name, _equals, value = param.partition("=")
        params.append(f"{name}={REDACTED}" if _secret_param(name, value) else param)
    return path + question + "&".join(params) + space + tail


class RedactCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        record.msg = redact(str(record.msg))
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's default logging config with the redacting filter on the access handler.

    A `logging.config.dictConfig` schema, typed as loosely as uvicorn and the standard
    library type it: this only adds one filter to what uvicorn hands over."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_credentials"] = {"()": RedactCredentials}
    config["handlers"]["access"].setdefault("filters", []).append("redact_credentials")
    return config
