"""CPU time by process over a stretch of a bench run, read from /proc (Linux): what each side
of a ratio spent, and where, so that a ratio the machine's cores bound can be told from one
that hangar's own code bounds."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

Sample = dict[str, dict[int, float]]  # part -> pid -> CPU seconds so far


def seconds(pid: int) -> float | None:
    """`pid`'s CPU seconds so far, user and system, with those of its children it has reaped
    (a PostgreSQL backend that ended during the stretch is counted in the postmaster's);
    None when it is gone or /proc is not there."""
    try:
        # Fields 14-17 of /proc/PID/stat, counted after the command name's ")".
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return sum(int(f) for f in fields[11:15]) / TICKS_PER_S
    except (OSError, ValueError, IndexError):
        return None


def postgres_pids() -> list[int]:
    """The PostgreSQL server's processes on this machine: the bench's database is the only
    one under load while it runs."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if (entry / "comm").read_text().strip() == "postgres":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def sample(parts: dict[str, Iterable[int]]) -> Sample:
    return {
        part: {pid: s for pid in pids if (s := seconds(pid)) is not None}
        for part, pids in parts.items()
    }


def spent(before: Sample, after: Sample) -> dict[str, float]:
    """CPU seconds each part spent between two samples; a process that started between them
    counts from nothing."""
    return {
        part: sum(s - before.get(part, {}).get(pid, 0.0) for pid, s in pids.items())
        for part, pids in after.items()
    }
