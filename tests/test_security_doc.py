"""SECURITY.md names the tests that hold each promise: every test it names must exist, so the
document cannot keep pointing at a test that was renamed or removed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

# `tests/x/test_y.py::test_z` names a test; a following `::test_w` names another in that file.
_REFERENCE = re.compile(r"`(?P<path>tests/[\w/]+\.py)?(?:::(?P<test>\w+))?`")


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def _references(text: str) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    current: str | None = None
    for match in _REFERENCE.finditer(text):
        path, test = match["path"], match["test"]
        if path is None and test is None:
            continue
        if path is not None:
            current = path
        assert current is not None, f"::{test} names no file before it"
        found.append((current, test))
    return found


def test_every_test_named_in_security_md_exists(repo_root: Path) -> None:
    references = _references((repo_root / "SECURITY.md").read_text())
    assert len(references) > 40
    for path, test in references:
        file = repo_root / path
        assert file.is_file(), path
        if test is not None:
            assert test in _tests_in(file), f"{path}::{test}"


def test_a_misnamed_test_would_be_caught() -> None:
    refs = _references("`tests/test_security_doc.py::test_a` and `::test_b`, `tests/x.py`")
    assert refs == [
        ("tests/test_security_doc.py", "test_a"),
        ("tests/test_security_doc.py", "test_b"),
        ("tests/x.py", None),
    ]
    with pytest.raises(AssertionError):
        _references("`::test_orphan`")
