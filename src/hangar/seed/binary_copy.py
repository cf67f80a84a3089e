"""PostgreSQL's binary COPY format, written in plain Python for the column types seed rows hold.

asyncpg encodes records itself, but only in the process that holds the connection; encoding
here lets another process turn rows into bytes while the connection's process only forwards
them (see hangar.seed.producer). The format is documented in PostgreSQL's COPY page:
a header, then per row an int16 field count and per field an int32 length (-1 for NULL)
followed by the value in the type's binary send format, then an int16 -1.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from operator import call
from typing import Any

from sqlalchemy import Boolean, Date, DateTime, Float, String, Table, Uuid
from sqlalchemy.types import TypeDecorator, TypeEngine

from hangar.seed.common import Row

HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)  # signature, flags, no extension
TRAILER = struct.pack("!h", -1)

_NULL = struct.pack("!i", -1)
_TRUE = struct.pack("!i?", 1, True)
_FALSE = struct.pack("!i?", 1, False)
_UUID_LENGTH = struct.pack("!i", 16)
_LENGTH = struct.Struct("!i").pack
_FIELD_COUNT = struct.Struct("!h").pack
_INT8 = struct.Struct("!iq").pack
_INT4 = struct.Struct("!ii").pack
_FLOAT8 = struct.Struct("!id").pack

# PostgreSQL counts timestamps in microseconds, and dates in days, from 2000-01-01.
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(2000, 1, 1).toordinal()
_MICROSECOND = timedelta(microseconds=1)

Encode = Callable[[Any], bytes]


# Each takes a column's value or None: encode_rows calls them on every value, unchecked.


def _uuid(value: Any) -> bytes:
    return _NULL if value is None else _UUID_LENGTH + value.bytes


def _timestamptz(value: datetime | None) -> bytes:
    # An aware datetime only: subtracting a naive one from the epoch raises, as the
    # application's UTCDateTime refuses naive values.
    return _NULL if value is None else _INT8(8, (value - _EPOCH) // _MICROSECOND)


def _date(value: date | None) -> bytes:
    return _NULL if value is None else _INT4(4, value.toordinal() - _EPOCH_DAY)


def _text(value: str | None) -> bytes:
    if value is None:
        return _NULL
    data = value.encode()
    return _LENGTH(len(data)) + data


def _bool(value: bool | None) -> bytes:
    return _NULL if value is None else _TRUE if value else _FALSE


def _float8(value: float | None) -> bytes:
    return _NULL if value is None else _FLOAT8(8, value)


def _encoder_for(type_: TypeEngine[Any]) -> Encode:
    if isinstance(type_, TypeDecorator):
        type_ = type_.impl_instance
    if isinstance(type_, Uuid):
        return _uuid
    if isinstance(type_, DateTime) and type_.timezone:
        return _timestamptz
    if isinstance(type_, Date):
        return _date
    if isinstance(type_, String):  # varchar and text share the send format
        return _text
    if isinstance(type_, Boolean):
        return _bool
    if isinstance(type_, Float):  # sa.Float is double precision on PostgreSQL
        return _float8
    raise TypeError(f"no binary COPY encoding for {type_!r}")


def encoders(table: Table, columns: Sequence[str]) -> list[Encode]:
    """How to encode each of `columns` of `table`; module-level functions, so they pickle."""
    return [_encoder_for(table.columns[name].type) for name in columns]


def encode_rows(encoders: Sequence[Encode], rows: Iterable[Row]) -> bytes:
    """Rows as the body of a binary COPY (no header or trailer: batches follow each other)."""
    width = len(encoders)
    field_count = _FIELD_COUNT(width)
    out: list[bytes] = []
    append = out.append
    for row in rows:
        if len(row) != width:
            raise ValueError(f"a row of {len(row)} values for {width} columns")
        append(field_count)
        # map() walks the row in C: this is the inner loop of a million-row seed.
        append(b"".join(map(call, encoders, row)))
    return b"".join(out)
