"""One decoder for every model: a frozen dataclass is read from JSON by its own type hints,
so a model's fields are written once (and the drift test reads the same hints)."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from datetime import date, datetime
from typing import Any, TypeVar

from hangar_client import _wire

T = TypeVar("T")
_OFF_WIRE = "off_wire"
# The metadata of a model field that is no JSON key of its own (Member.contact).
OFF_WIRE = {_OFF_WIRE: True}

_SCALARS: dict[Any, Callable[[Any], Any]] = {
    str: _wire.string,
    bool: _wire.boolean,
    float: _wire.number,
    datetime: _wire.timestamp,
    date: _wire.day,
}


def parser(hint: Any) -> Callable[[Any], Any]:
    """The parser of one field's type: a scalar, a Literal (kept as the string sent: a value
    added later must not crash old clients), `X | None`, `tuple[X, ...]` (a JSON array), a
    nested model, or an open JSON object."""
    if hint in _SCALARS:
        return _SCALARS[hint]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        model: type[Any] = hint
        return lambda value: decode(model, value)
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = parser(typing.get_args(hint)[0])
        return lambda value: tuple(item(one) for one in _wire.array(value))
    if origin is typing.Literal:
        return _wire.string
    if origin in (typing.Union, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _wire.optional(parser(inner))
    if origin is dict:
        return _wire.obj
    raise TypeError(f"no parser for {hint!r}")


_Plan = tuple[tuple[str, Callable[[Any], Any], bool], ...]
_PLANS: dict[type[Any], _Plan] = {}


def _plan(cls: type[Any]) -> _Plan:
    if cls not in _PLANS:
        _PLANS[cls] = _make_plan(cls)
    return _PLANS[cls]


def _make_plan(cls: type[Any]) -> _Plan:
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            f.name,
            parser(hints[f.name]),
            f.default is dataclasses.MISSING,  # a field with a default may be absent
        )
        for f in dataclasses.fields(cls)
        if f.init and not f.metadata.get(_OFF_WIRE)
    )


def decode(cls: type[T], body: Any) -> T:
    """`cls` from a JSON object: the keys it names (absent ones only if they have a default),
    each checked against its type; unknown keys ignored, as the spec asks of clients."""
    source = _wire.obj(body)
    values = {}
    for name, parse, required in _plan(cls):
        if name in source:
            values[name] = parse(source[name])
        elif required:
            raise _wire.InvalidPayload(f"{cls.__name__}: missing field {name!r}")
    return cls(**values)
