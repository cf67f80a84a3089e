"""The logging configuration of every hangar process, in the format HANGAR_LOG_FORMAT names.

`text` (the default) is what hangar always wrote: `hangar serve` uvicorn's own lines, with
hangar's bare on stderr (Python's last-resort handler, made explicit so that it can carry the
filters); `hangar worker` a timestamped line per record, with its level; a command, hangar's
bare lines. `json` is one JSON object
per line on stderr for every record of every logger, uvicorn's included: timestamp, level,
logger, message, request_id while a request is served, what the record was given as `extra`
(a delivery attempt's ids), and for access lines method, path, status, duration_ms (until
the response began, when uvicorn logs it) and client. Either way every handler carries
hangar.http.access_log's filter, so no format can write a credential.

HANGAR_LOG_LEVEL (debug, info, warning, error; default info) is the level of hangar's own
loggers and uvicorn's in every process and format; other libraries' (Alembic, SQLAlchemy,
asyncio) write warnings and errors only, whatever the level, so that `debug` shows hangar's
detail rather than every library's. In every format a probe or a scrape that succeeded writes
no access line (hangar.http.access_log.QuietProbes).

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

from hangar.foundation.config import LogFormat, LogLevel
from hangar.http.access_log import (
    QuietProbes,
    RedactCredentials,
    current_request,
    log_config,
    scrub,
)

# serve: uvicorn's loggers and the app's; worker: the dispatcher and scheduler process;
# command: any other `hangar` command.
Process = Literal["serve", "worker", "command"]

_FILTERS = {"redact_credentials": {"()": RedactCredentials}, "quiet_probes": {"()": QuietProbes}}


def _stderr(formatter: str = "bare") -> dict[str, Any]:
    """Python's lastResort handler as a configured one (which records reach it is the loggers'
    levels' business): a new dict each time, as whoever reads a schema may change it."""
    return {
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
        "formatter": formatter,
        "filters": ["quiet_probes", "redact_credentials"],
    }


# The loggers HANGAR_LOG_LEVEL steers; any other library's are held to warnings and errors.
_STEERED = ("hangar", "uvicorn", "uvicorn.error", "uvicorn.access")


def config(fmt: LogFormat, process: Process, level: LogLevel = "info") -> dict[str, Any]:
    """The `logging.config.dictConfig` schema for `process` in `fmt` at `level` (uvicorn
    applies the serve one in each of its processes)."""
    if fmt == "json":
        built = _json_config()
    elif process == "serve":
        built = log_config()
        built["handlers"]["access"]["filters"].insert(0, "quiet_probes")
        built["formatters"]["bare"] = {"format": "%(message)s"}
        built["handlers"]["last_resort"] = _stderr()
        built["root"] = {"handlers": ["last_resort"]}
    else:
        # The worker: what logging.basicConfig made of it before, with the level added now
        # that there is more than one to read. A command: the bare message.
        worker = process == "worker"
        built = {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {
                "bare": {"format": "%(message)s"},
                "timestamped": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
            },
            "handlers": {"stderr": _stderr("timestamped" if worker else "bare")},
            "root": {"handlers": ["stderr"]},
        }
    built["filters"] = {**built.get("filters", {}), **_FILTERS}
    loggers = built.setdefault("loggers", {})
    if process != "serve" or fmt == "json":
        # uvicorn's loggers reach the root's handler like every other: a uvicorn configured
        # earlier in this process (a test's server, the demo's) may have left them with
        # handlers of their own and propagation off, which dictConfig alone keeps.
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
            loggers[name] = {**loggers.get(name, {}), "handlers": [], "propagate": True}
    for name in _STEERED:
        loggers[name] = {**loggers.get(name, {}), "level": level.upper()}
    built["root"]["level"] = "WARNING"
    return built


def _json_config() -> dict[str, Any]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": json_formatter}},
        "handlers": {
            "json": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "json",
                "filters": ["quiet_probes", "redact_credentials"],
            }
        },
        # uvicorn's loggers lose their own handlers and reach the root's, like every other.
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": True},
        },
        "root": {"handlers": ["json"]},
    }


def configure(fmt: LogFormat, process: Process, level: LogLevel = "info") -> None:
    """Configures this process's logging (the worker's, a command's; uvicorn applies
    `config(fmt, "serve", level)` itself)."""
    logging.config.dictConfig(config(fmt, process, level))
    _configure_structlog()


def failure(reason: str, fmt: LogFormat) -> str:
    """The one line a command that cannot go on writes on stderr: `hangar: <reason>`, or in
    JSON an error record with the format's first fields. `reason` is hangar's own text, not
    scrubbed: the messages quote example URLs such as postgresql://user@host/db (what may
    hold a secret, an exception's text, the caller redacts)."""
    if fmt == "text":
        return f"hangar: {reason}"
    stamped = _TIMESTAMP(None, "", {})
    line = {**stamped, "level": "error", "logger": "hangar", "message": reason}
    return orjson.dumps(line).decode()


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
_TIMESTAMP = structlog.processors.TimeStamper(fmt="iso", utc=True)
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
            _TIMESTAMP,
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
