"""What every seed generator shares: the row type, weighted tables and the clock arithmetic."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

T = TypeVar("T")

# One row in the order of its table's COLUMNS: COPY takes tuples as they are, and the
# SQLite path zips them with the column names.
Row = tuple[Any, ...]

DAY = 86_400.0
HOUR = 3_600.0


def table(weights: Iterable[tuple[T, int]]) -> list[T]:
    """Each value repeated by its weight: `rng.choice` on it is a weighted pick, and far
    cheaper per row than `rng.choices`."""
    return [value for value, weight in weights for _ in range(weight)]


def at(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def ms(ts: float) -> int:
    return int(ts * 1000)


def between(rng: random.Random, start: float, end: float) -> float:
    return start + (end - start) * rng.random()


def batched(rows: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def pick(rng: random.Random, pool: Sequence[T]) -> T | None:
    return rng.choice(pool) if pool else None
