"""The logging configuration of every hangar process, in the format HANGAR_LOG_FORMAT names.

`text` (the default) is what hangar always wrote: `hangar serve` uvicorn's own lines, with
hangar's warnings bare on stderr (Python's last-resort handler, made explicit so that it can
carry the filter); `hangar worker` a timestamped line per record. `json` is one JSON object
per line on stderr for every record of every logger, uvicorn's included: timestamp, level,
logger, message, request_id while a request is served, what the record was given as `extra`
(a delivery attempt's ids), and for access lines method, path, status, duration_ms (until
the response began, when uvicorn logs it) and client. Either way every handler carries
hangar.http.access_log's filter, so no format can write a credential.

stderr, not stdout: the commands print their results on stdout, one JSON object each, and
logs must never mix into them.
"""

from __future__ import annotations

import logging
import logging.config
import time
from typing import Any, Literal

import orjson
import structlog
from structlog.typing import EventDict, WrappedLogger

from hangar.foundation.config import LogFormat
from hangar.http.access_log import RedactCredentials, current_request, log_config, scrub

# serve: uvicorn's loggers and the app's; worker: the dispatcher and scheduler process;
# command: any other `hangar` command.
Process = Literal["serve", "worker", "command"]

_REDACT = {"redact_credentials": {"()": RedactCredentials}}
# Python's lastResort handler as a configured one: WARNING and above, the bare message.
_BARE_STDERR = {
    "class": "logging.StreamHandler",
    "stream": "ext://sys.stderr",
    "formatter": "bare",
    "level": "WARNING",
    "filters": ["redact_credentials"],
}


def config(fmt: LogFormat, process: Process) -> dict[str, Any]:
    """The `logging.config.dictConfig` schema for `process` in `fmt` (uvicorn applies the
    serve one in each of its processes)."""
    if fmt == "json":
        return _json_config()
    if process == "serve":
        served = log_config()
        served["formatters"]["bare"] = {"format": "%(message)s"}
        served["handlers"]["last_resort"] = _BARE_STDERR
        served["root"] = {"handlers": ["last_resort"], "level": "WARNING"}
        return served
    if process == "worker":  # what logging.basicConfig made of it before
        formatter = {"format": "%(asctime)s %(name)s %(message)s"}
        handler = {**_BARE_STDERR, "formatter": "timestamped", "level": "NOTSET"}
        level = "INFO"
    else:
        formatter, handler, level = {"format": "%(message)s"}, _BARE_STDERR, "WARNING"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": _REDACT,
        "formatters": {"timestamped" if process == "worker" else "bare": formatter},
        "handlers": {"stderr": handler},
        "root": {"handlers": ["stderr"], "level": level},
    }


def _json_config() -> dict[str, Any]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": _REDACT,
        "formatters": {"json": {"()": json_formatter}},
        "handlers": {
            "json": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "json",
                "filters": ["redact_credentials"],
            }
        },
        # uvicorn's loggers lose their own handlers and reach the root's, like every other.
        "loggers": {
            "uvicorn": {"handlers": [], "level": "INFO", "propagate": True},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {"handlers": [], "level": "INFO", "propagate": True},
        },
        "root": {"handlers": ["json"], "level": "INFO"},
    }


def configure(fmt: LogFormat, process: Process) -> None:
    """Configures this process's logging (the worker's, a command's; uvicorn applies
    `config(fmt, "serve")` itself)."""
    logging.config.dictConfig(config(fmt, process))
    _configure_structlog()


def _configure_structlog() -> None:
    # structlog's loggers become standard library records with their keys as `extra`, so
    # they go through the same handlers, filter and format as every other record.
    structlog.configure(
        processors=[structlog.stdlib.render_to_log_kwargs],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


# --- the JSON format ------------------------------------------------------------------------

# Record attributes that are not the record's own fields: uvicorn's coloured copy of a message.
_NOT_FIELDS = {"color_message"}
_RECORD_KEYS = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
_FIRST = ("timestamp", "level", "logger", "message", "request_id")


def _record(event: EventDict) -> logging.LogRecord:
    record = event["_record"]
    assert isinstance(record, logging.LogRecord)
    return record


def _extras(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    for key, value in _record(event).__dict__.items():
        if key not in _RECORD_KEYS and key not in _NOT_FIELDS and not key.startswith("_"):
            event[key] = value
    return event


def _request_id(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    served = current_request.get()
    if served is not None:
        event["request_id"] = served.id
    return event


def _access(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """An access line's parts, from the arguments uvicorn logs it with (the filter has
    redacted them already)."""
    args = event.pop("positional_args", None)
    if _record(event).name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
        client, method, path, _version, status = args
        event.update(client=client, method=method, path=path, status=status)
        served = current_request.get()
        if served is not None:
            event["duration_ms"] = round((time.perf_counter() - served.started) * 1000, 1)
    return event


def _exception(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """The traceback as the filter left it (scrubbed), never formatted afresh."""
    event.pop("exc_info", None)
    record = _record(event)
    if record.exc_text:
        event["exception"] = record.exc_text
    if record.stack_info:
        event["stack"] = record.stack_info
    event.pop("stack_info", None)
    return event


def _scrub_fields(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    # A field's value may come from a client (a request id) or a structlog call: scrubbed too.
    return {key: scrub(v) if isinstance(v, str) else v for key, v in event.items()}


def _render(_: WrappedLogger, __: str, event: EventDict) -> str:
    ordered = {key: event.pop(key) for key in _FIRST if key in event}
    ordered.update(event)
    return orjson.dumps(ordered, default=str).decode()


def json_formatter() -> structlog.stdlib.ProcessorFormatter:
    """One JSON object per record (dictConfig's factory, so each process builds its own)."""
    _configure_structlog()
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.contextvars.merge_contextvars,
            _request_id,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            # `message`: `event` is a field of hangar's own (a delivery's event name).
            structlog.processors.EventRenamer("message"),
            _extras,
            _access,
            _exception,
        ],
        # The access line's arguments, for `_access` (ProcessorFormatter clears the record's).
        pass_foreign_args=True,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _scrub_fields,
            _render,
        ],
    )
