"""The framework internals hangar relies on are still the ones it was written against.

Four modules reach past a framework's public face (pyproject.toml's contract "Framework
internals" names them and lets no other module do it):

- hangar.external.query (QuickQuery) reads the public API's query with FastAPI's own field
  objects and helpers (`fastapi._compat`), doing what FastAPI's solver does for a plain query
  parameter (tests/external/test_quick_query.py holds the two to the same answers);
- hangar.http.protocol subclasses uvicorn's httptools protocol: it overrides its parser
  callbacks, replaces its `data_received`, `send_400_response` and `shutdown` with copies
  that refuse and drain, and reads the per-connection state uvicorn keeps (`cycle`, `url`,
  `headers`, `flow`...);
- hangar.cli.processes subclasses uvicorn's supervisor (`uvicorn.supervisors.Multiprocess`),
  replacing its signal handlers and hooking its loop;
- hangar.cli reads the exceptions of the copy of click that typer carries (`typer._click`).

hangar.http.server and hangar.wiring.worker_metrics subclass uvicorn's public `Server` but
override `handle_exit` and `capture_signals` and read `servers` and `server_state`, which
uvicorn does not document either.

None of this is covered by the frameworks' own compatibility promises, so an upgrade can
change it without a word. This module fails first, naming the hangar module and what to
re-check: the versions are the tested ones (requirements.lock and the environment); every
private name imported still exists; every method overridden or called keeps its signature;
every method whose body hangar copies or replaces is unchanged, line for line (a fingerprint
of its source); no attribute hangar's subclasses add has become one of the framework's own.

After an upgrade: read the framework's change log and the methods named in the failures,
adapt the hangar module, then print the new figures with
`.venv/bin/python tests/test_framework_pins.py` and paste them here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.metadata
import inspect
import pkgutil
import re
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The versions the modules below were written and tested against.
TESTED = {"fastapi": "0.165.0", "uvicorn": "0.54.0", "typer": "0.29.2"}

QUERY = "hangar.external.query"
PROTOCOL = "hangar.http.protocol"
PROCESSES = "hangar.cli.processes"
SERVER = "hangar.http.server and hangar.wiring.worker_metrics"
HTTPTOOLS = "uvicorn.protocols.http.httptools_impl"
MULTIPROCESS = "uvicorn.supervisors.multiprocess"

# Who relies on each package, for the messages.
RELYING = {
    "fastapi": QUERY,
    "uvicorn": f"{PROTOCOL}, {PROCESSES}, {SERVER}",
    "typer": "hangar.cli (its usage errors)",
}

# Private names imported: "module:name" -> the hangar module importing it.
IMPORTED = {
    "fastapi._compat:ModelField": QUERY,
    "fastapi._compat:field_annotation_is_sequence": QUERY,
    "uvicorn._types:ASGIReceiveCallable": PROTOCOL,
    "uvicorn._types:ASGISendCallable": PROTOCOL,
    "uvicorn._types:Scope": PROTOCOL,
    "uvicorn.protocols.http.flow_control:service_unavailable": PROTOCOL,
    f"{HTTPTOOLS}:HttpToolsProtocol": PROTOCOL,
    f"{HTTPTOOLS}:RequestResponseCycle": PROTOCOL,
    f"{HTTPTOOLS}:STATUS_LINE": PROTOCOL,
    "uvicorn.supervisors:Multiprocess": PROCESSES,
    "uvicorn.config:STARTUP_FAILURE": f"{PROCESSES} and hangar.cli.serve",
    "typer._click.exceptions:ClickException": "hangar.cli",
    "typer._click.exceptions:UsageError": "hangar.cli",
    "typer._click.exceptions:NoArgsIsHelpError": "hangar.cli",
}

# Methods overridden or called through super(): "module:Class.method" -> (signature, who).
SIGNATURES = {
    "fastapi._compat:ModelField.validate": (
        "(self, value: Any, values: dict[str, typing.Any] = {}, *, "
        "loc: tuple[int | str, ...] = ()) -> tuple[typing.Any, list[dict[str, typing.Any]]]",
        QUERY,
    ),
    "fastapi._compat:field_annotation_is_sequence": ("(annotation: object) -> bool", QUERY),
    f"{HTTPTOOLS}:HttpToolsProtocol.__init__": (
        "(self, config: 'Config', server_state: 'ServerState', app_state: 'dict[str, Any]', "
        "_loop: 'asyncio.AbstractEventLoop | None' = None) -> 'None'",
        PROTOCOL,
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.connection_made": (
        "(self, transport: 'asyncio.Transport') -> 'None'",
        PROTOCOL,
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.connection_lost": (
        "(self, exc: 'Exception | None') -> 'None'",
        PROTOCOL,
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.data_received": ("(self, data: 'bytes') -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol.send_400_response": ("(self, msg: 'str') -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol.on_message_begin": ("(self) -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol.on_headers_complete": ("(self) -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol.on_body": ("(self, body: 'bytes') -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol.on_message_complete": ("(self) -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol._start_asgi_task": (
        "(self, cycle: 'RequestResponseCycle', app: 'ASGI3Application') -> 'None'",
        PROTOCOL,
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.shutdown": ("(self) -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol._unset_keepalive_if_required": ("(self) -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol._should_upgrade": ("(self) -> 'bool'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol._unsupported_upgrade_warning": ("(self) -> 'None'", PROTOCOL),
    f"{HTTPTOOLS}:HttpToolsProtocol.handle_websocket_upgrade": ("(self) -> 'None'", PROTOCOL),
    f"{MULTIPROCESS}:Multiprocess.__init__": (
        "(self, config: 'Config', sockets: 'list[socket]') -> 'None'",
        PROCESSES,
    ),
    f"{MULTIPROCESS}:Multiprocess.init_processes": ("(self) -> 'None'", PROCESSES),
    f"{MULTIPROCESS}:Multiprocess.keep_subprocess_alive": ("(self) -> 'None'", PROCESSES),
    f"{MULTIPROCESS}:Multiprocess.handle_signals": ("(self) -> 'None'", PROCESSES),
    f"{MULTIPROCESS}:Multiprocess.terminate_all": ("(self) -> 'None'", PROCESSES),
    f"{MULTIPROCESS}:Multiprocess.join_all": ("(self) -> 'None'", PROCESSES),
    "uvicorn.server:Server.handle_exit": (
        "(self, sig: 'int', frame: 'FrameType | None') -> 'None'",
        SERVER,
    ),
    "uvicorn.server:Server.capture_signals": ("(self) -> 'Generator[None, None, None]'", SERVER),
}

# Bodies hangar copies, replaces or runs ahead of: a change in any of them is a change hangar
# would not follow. "module:Class.method" -> (sha256 of its dedented source, 16 digits, who
# relies on it and what to re-check).
COPIED = {
    "fastapi.dependencies.utils:request_params_to_args": (
        "e028df88c5ead125",
        f"{QUERY}.QuickQuery does what it does for a plain query parameter",
    ),
    "fastapi.dependencies.utils:_get_multidict_value": (
        "1c0a3bde8f297e56",
        f"{QUERY}.QuickQuery reads a value (the last, or a list's every one) as it does",
    ),
    "fastapi.dependencies.utils:_validate_value_with_model_field": (
        "58abee44a7509b56",
        f"{QUERY}.QuickQuery hands out the default and validates as it does",
    ),
    "fastapi._compat:ModelField.validate": (
        "a45129b96dcfd1d6",
        f"{QUERY}.QuickQuery validates each value with it and steps aside on any error",
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.data_received": (
        "02c2572f1df55907",
        f"{PROTOCOL}.data_received is this method with refusals added: carry the change over",
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.send_400_response": (
        "0b0d3ace8d263788",
        f"{PROTOCOL}.send_400_response replaces it (hangar's error shape)",
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.shutdown": (
        "4822ef10fa982b12",
        f"{PROTOCOL}.shutdown replaces it (an idle connection drains instead of closing)",
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.on_headers_complete": (
        "7e259152e5aade71",
        f"{PROTOCOL} relies on it making `self.cycle` and picking `service_unavailable` "
        "past limit_concurrency (hangar answers that one in JSON)",
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.on_body": (
        "415b4cef19fba083",
        f"{PROTOCOL}.on_body counts the body before this runs",
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol.on_response_complete": (
        "5684fd801d0683ac",
        f"{PROTOCOL} relies on it arming the keep-alive timer after each response",
    ),
    f"{MULTIPROCESS}:Multiprocess.__init__": (
        "6c2eb06aa793513d",
        f"{PROCESSES}.ServersAndWorker replaces its SIGTERM and SIGINT handlers",
    ),
    f"{MULTIPROCESS}:Multiprocess.run": (
        "451a5dcf478978e3",
        f"{PROCESSES}.ServersAndWorker hooks its loop (init_processes, keep_subprocess_alive, "
        "terminate_all, join_all) and sets `should_exit` from its own signal handler",
    ),
    "uvicorn.server:Server.shutdown": (
        "9f8a90ed456dcfee",
        "hangar.http.server.Server._stop_listening does its first steps at the signal",
    ),
    "uvicorn.server:Server.capture_signals": (
        "85d29b580603d413",
        "hangar.wiring.worker_metrics replaces it with nothing (the worker's handlers stay)",
    ),
}

# Attributes hangar reads or writes on the framework's objects, set in the framework's code:
# "module:Class" -> (names, who).
ATTRIBUTES = {
    "fastapi._compat:ModelField": ("alias default field_info name", QUERY),
    "fastapi.dependencies.models:Dependant": (
        "background_tasks_param_name body_params call cookie_params dependencies header_params "
        "http_connection_param_name path_params query_params request_param_name "
        "response_param_name security_scopes_param_name websocket_param_name",
        f"{QUERY} (and hangar.http.routing: `dependencies`)",
    ),
    f"{HTTPTOOLS}:HttpToolsProtocol": (
        "app_state client cycle flow headers loop parser server_state transport url",
        PROTOCOL,
    ),
    f"{HTTPTOOLS}:RequestResponseCycle": (
        "disconnected keep_alive message_event response_complete response_started",
        PROTOCOL,
    ),
    f"{MULTIPROCESS}:Multiprocess": ("processes should_exit signal_queue sockets", PROCESSES),
    "uvicorn.server:Server": ("server_state servers should_exit", SERVER),
    "uvicorn.server:ServerState": ("connections default_headers", f"{PROTOCOL}, {SERVER}"),
}

# hangar's subclasses: their own attributes must not be the framework's.
SUBCLASSES = {
    "hangar.http.protocol:BoundedHttpToolsProtocol": f"{HTTPTOOLS}:HttpToolsProtocol",
    "hangar.cli.processes:ServersAndWorker": f"{MULTIPROCESS}:Multiprocess",
    "hangar.http.server:Server": "uvicorn.server:Server",
    "hangar.wiring.worker_metrics:_Server": "uvicorn.server:Server",
}
# Those of their methods that override the framework's on purpose (the rest must be new).
OVERRIDES = {
    "hangar.http.protocol:BoundedHttpToolsProtocol": {
        "__init__",
        "connection_made",
        "connection_lost",
        "data_received",
        "on_message_begin",
        "on_headers_complete",
        "on_body",
        "on_message_complete",
        "_start_asgi_task",
        "shutdown",
        "send_400_response",
    },
    "hangar.cli.processes:ServersAndWorker": {
        "__init__",
        "init_processes",
        "keep_subprocess_alive",
        "terminate_all",
        "join_all",
    },
    "hangar.http.server:Server": {"__init__", "handle_exit"},
    "hangar.wiring.worker_metrics:_Server": {"capture_signals"},
}


def resolve(target: str) -> Any:
    module, _, qualified = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualified.split("."):
        found = getattr(found, part)
    return found


def fingerprint(target: str) -> str:
    source = textwrap.dedent(inspect.getsource(inspect.unwrap(resolve(target))))
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def assigned(cls: type) -> set[str]:
    """The attributes `cls` and its bases (up to object) assign on `self` in their source."""
    return set().union(*(assigned_by(klass) for klass in cls.__mro__ if klass is not object))


def assigned_by(cls: type) -> set[str]:
    """The attributes `cls`'s own source assigns on `self`, and its fields if a dataclass."""
    fields = set()
    if dataclasses.is_dataclass(cls):
        fields = {field.name for field in dataclasses.fields(cls)}
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):  # a class of the standard library's C code
        return fields
    return fields | set(re.findall(r"\bself\.(\w+)\s*(?::[^=\n]+)?=(?!=)", source))


def locked(lock: Path) -> dict[str, str]:
    return dict(re.findall(r"^([a-z0-9_.-]+)==([^\s\\]+)", lock.read_text(), re.MULTILINE))


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-production.lock"])
@pytest.mark.parametrize("package", sorted(TESTED))
def test_the_locks_pin_the_tested_versions(lock: str, package: str) -> None:
    pinned = locked(ROOT / lock).get(package)
    assert pinned == TESTED[package], (
        f"{lock} pins {package} {pinned}, but {RELYING[package]} were tested against "
        f"{TESTED[package]} and rely on its internals: read its change log and re-check "
        "everything this module lists for it, then set TESTED (module docstring)"
    )


@pytest.mark.parametrize("package", sorted(TESTED))
def test_the_installed_versions_are_the_tested_ones(package: str) -> None:
    installed = importlib.metadata.version(package)
    assert installed == TESTED[package], (
        f"{package} {installed} is installed, {TESTED[package]} was tested with "
        f"{RELYING[package]}: run ./dev to install requirements.lock, or re-check (docstring)"
    )


@pytest.mark.parametrize("target", sorted(IMPORTED))
def test_each_private_name_imported_still_exists(target: str) -> None:
    try:
        resolve(target)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{IMPORTED[target]} imports {target}, which is gone: {exc}")


@pytest.mark.parametrize("target", sorted(SIGNATURES))
def test_each_method_relied_on_keeps_its_signature(target: str) -> None:
    expected, who = SIGNATURES[target]
    try:
        found = str(inspect.signature(resolve(target)))
    except AttributeError:
        pytest.fail(f"{who} overrides or calls {target}, which is gone")
    assert found == expected, (
        f"{who} overrides or calls {target}, whose signature changed: {expected} -> {found}"
    )


@pytest.mark.parametrize("target", sorted(COPIED))
def test_each_body_copied_or_replaced_is_unchanged(target: str) -> None:
    expected, why = COPIED[target]
    assert fingerprint(target) == expected, (
        f"{target} changed since hangar was tested with it: {why}. Read the new source, "
        "then update COPIED (module docstring)"
    )


@pytest.mark.parametrize("target", sorted(ATTRIBUTES))
def test_each_attribute_relied_on_is_still_set(target: str) -> None:
    names, who = ATTRIBUTES[target]
    cls = resolve(target)
    missing = sorted(
        name for name in names.split() if name not in assigned(cls) and not hasattr(cls, name)
    )
    assert not missing, f"{who} uses {', '.join(missing)} of {target}, no longer set there"


@pytest.mark.parametrize("subclass", sorted(SUBCLASSES))
def test_the_subclasses_own_names_are_not_the_frameworks(subclass: str) -> None:
    cls, base = resolve(subclass), resolve(SUBCLASSES[subclass])
    theirs = assigned(base) | set(dir(base))
    ours = assigned_by(cls) | {name for name in vars(cls) if not name.startswith("__")}
    clashes = sorted((ours & theirs) - OVERRIDES[subclass])
    assert not clashes, (
        f"{subclass} defines {', '.join(clashes)}, which {SUBCLASSES[subclass]} now has too: "
        "rename hangar's, or, if it is an override on purpose, add it to OVERRIDES"
    )
    gone = sorted(OVERRIDES[subclass] - theirs)
    assert not gone, f"{subclass} overrides {', '.join(gone)}, which its base no longer has"


def test_the_contract_forbids_every_private_module_of_the_frameworks() -> None:
    # A module a framework adds in an upgrade is fenced like the others, not left open.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["name"].startswith("Framework internals")]
    forbidden = set(contract["forbidden_modules"])
    private = {
        f"{package}.{module.name}"
        for package in ("fastapi", "starlette", "pydantic", "typer")
        for module in pkgutil.iter_modules(importlib.import_module(package).__path__)
        if module.name.startswith("_") and not module.name.startswith("__")
    }
    assert "uvicorn.*" in forbidden
    assert private <= forbidden, (
        f"pyproject.toml's contract {contract['name']!r} does not forbid "
        f"{', '.join(sorted(private - forbidden))}: add them to its forbidden_modules"
    )


if __name__ == "__main__":
    # The figures to paste after an upgrade has been re-checked (module docstring).
    for target in sorted(SIGNATURES):
        print(f"{target}\n    {inspect.signature(resolve(target))}")
    for target in sorted(COPIED):
        print(f"{target}: {fingerprint(target)}")
