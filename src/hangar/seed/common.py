"""What every seed generator shares: the row type, weighted tables and the clock arithmetic."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

T = TypeVar("T")

# One row in the order of its table's COLUMNS: COPY takes tuples as they are, and the
# SQLite path zips them with the column names.
Row = tuple[Any, ...]


@dataclass(frozen=True)
class Generated:
    """Rows still to be made, as `make(*args)`: a module-level generator function and
    picklable arguments, so that PostgreSQL can have another process make them
    (hangar.seed.producer) while SQLite makes them in this one."""

    make: Callable[..., Iterable[Row]]
    args: tuple[Any, ...]

    def rows(self) -> Iterable[Row]:
        return self.make(*self.args)


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
