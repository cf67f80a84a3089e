"""How many cores this process may use: what `hangar serve --workers auto` starts one server
process per.

The cores it may be scheduled on (its CPU affinity), fewer when its cgroup's CPU quota allows
less: a container limited to 2 CPUs on a 64-core machine sees 64 cores and may use 2, and 64
processes there would each get a sliver and be throttled together (issue 40). A quota of a
fraction rounds down, and never below one process (as Go's automaxprocs does). Both cgroup
versions: v2's `cpu.max` (`max 100000`, or `200000 100000`: quota and period in
microseconds) and v1's `cpu.cfs_quota_us` (-1 for none) and `cpu.cfs_period_us`, in the
process's own cgroup as /proc/self/cgroup names it, or at the root of the mount (where a
container sees its own cgroup).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
OWN_CGROUP = Path("/proc/self/cgroup")


def available_cores(root: Path = CGROUP_ROOT, own: Path = OWN_CGROUP) -> int:
    cores = len(os.sched_getaffinity(0))
    quota = cpu_quota(root, own)
    if quota is None:
        return cores
    return max(1, min(cores, math.floor(quota)))


def cpu_quota(root: Path = CGROUP_ROOT, own: Path = OWN_CGROUP) -> float | None:
    """The CPUs the cgroup quota allows (2.0 for 200000/100000), or None for no quota (or no
    cgroup this can read: then only the affinity counts)."""
    for folder in _candidates(root, own):
        v2 = _read(folder / "cpu.max")
        if v2 is not None:
            parts = v2.split()
            return _ratio(parts[0], parts[1]) if len(parts) == 2 else None
        quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
        if quota is not None and period is not None:
            return None if quota.strip() == "-1" else _ratio(quota, period)
    return None


def _candidates(root: Path, own: Path) -> list[Path]:
    """The folders that may hold this process's CPU limits, most specific first."""
    found: list[Path] = []
    text = _read(own) or ""
    for line in text.splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        relative = path.strip().lstrip("/")
        if controllers == "":  # v2: one unified hierarchy
            found.append(root / relative)
        elif "cpu" in controllers.split(","):  # v1: the cpu controller's hierarchy
            for mount in (root / controllers, root / "cpu", root / "cpu,cpuacct"):
                found += [mount / relative, mount]
    found.append(root)
    unique: list[Path] = []
    for folder in found:
        if folder not in unique:
            unique.append(folder)
    return unique


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None
