"""Each `hangar serve --workers N` keeps its processes' metrics in a directory of its own:
two instances on one machine never read or delete each other's files, whatever the
environment says."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from hangar.cli.processes import metrics_directory
from hangar.foundation.metrics import MULTIPROCESS_DIR


def test_two_instances_have_disjoint_directories_and_leave_each_other_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # TMPDIR, as Python read it
    monkeypatch.setenv(MULTIPROCESS_DIR, str(tmp_path / "from-the-env-file"))
    with metrics_directory(8000) as first:
        (first / "counter_101.db").write_bytes(b"the first instance's")
        # The second starts (on the same machine, while the first serves) and stops.
        with metrics_directory(8001) as second:
            assert os.environ[MULTIPROCESS_DIR] == str(second)
            (second / "counter_202.db").write_bytes(b"the second instance's")
            assert first != second
            assert not first.is_relative_to(second)
            assert not second.is_relative_to(first)
        assert [p.name for p in first.iterdir()] == ["counter_101.db"]
        assert not second.exists()
    assert not first.exists()
    assert os.environ[MULTIPROCESS_DIR] == str(tmp_path / "from-the-env-file")
    assert first.parent == second.parent == tmp_path  # TMPDIR: the unit's PrivateTmp
    assert first.name.startswith("hangar-metrics-8000-")


def test_the_directory_is_this_users_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # TMPDIR, as Python read it
    monkeypatch.delenv(MULTIPROCESS_DIR, raising=False)
    with metrics_directory(8000) as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert MULTIPROCESS_DIR not in os.environ
