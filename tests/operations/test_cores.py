"""`--workers auto` honours a container's CPU quota (issue 40): one process per core this
process may use, fewer under a cgroup quota (v1 and v2), rounded down, never none. Each test
builds the cgroup files it reads in a folder of its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hangar.cli.cores import available_cores, cpu_quota

CORES = len(os.sched_getaffinity(0))


def tree(tmp_path: Path, own: str, files: dict[str, str]) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    proc = tmp_path / "self-cgroup"
    proc.write_text(own)
    return root, proc


@pytest.mark.parametrize(
    ("own", "files", "quota"),
    [
        # v2, the container's own cgroup at the root of its mount
        ("0::/\n", {"cpu.max": "200000 100000\n"}, 2.0),
        ("0::/\n", {"cpu.max": "max 100000\n"}, None),
        ("0::/\n", {"cpu.max": "150000 100000\n"}, 1.5),
        # v2, a unit's cgroup below the root (systemd's CPUQuota=)
        (
            "0::/system.slice/hangar-serve@8001.service\n",
            {"system.slice/hangar-serve@8001.service/cpu.max": "100000 100000"},
            1.0,
        ),
        # v1, cpu and cpuacct mounted together
        (
            "12:cpu,cpuacct:/docker/abc\n11:memory:/docker/abc\n",
            {"cpu,cpuacct/cpu.cfs_quota_us": "300000", "cpu,cpuacct/cpu.cfs_period_us": "100000"},
            3.0,
        ),
        (
            "4:cpu,cpuacct:/\n",
            {"cpu,cpuacct/cpu.cfs_quota_us": "-1", "cpu,cpuacct/cpu.cfs_period_us": "100000"},
            None,
        ),
        # nothing readable: no quota known
        ("garbage", {}, None),
        ("0::/\n", {"cpu.max": "nonsense"}, None),
    ],
)
def test_the_quota_is_read_from_either_cgroup_version(
    tmp_path: Path, own: str, files: dict[str, str], quota: float | None
) -> None:
    root, proc = tree(tmp_path, own, files)
    assert cpu_quota(root, proc) == quota


def test_auto_is_the_affinity_capped_by_the_quota_rounded_down_and_never_none(
    tmp_path: Path,
) -> None:
    def cores(limit: str) -> int:
        root, proc = tree(tmp_path / limit.replace(" ", "-"), "0::/\n", {"cpu.max": limit})
        return available_cores(root, proc)

    assert cores("max 100000") == CORES
    assert cores("50000 100000") == 1  # half a CPU: still one process
    assert cores(f"{(CORES + 8) * 100000} 100000") == CORES  # the affinity is the ceiling
    if CORES >= 2:
        assert cores("150000 100000") == 1
        assert cores("200000 100000") == 2
