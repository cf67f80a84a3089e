"""The test suite's own layout: shared helpers live in tests/fixtures, and no test module,
conftest or helper imports a test module or a conftest (only tests.fixtures.*)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            names.append("." * node.level + (node.module or ""))
    return names


def test_modules_of_the_suite_import_only_the_fixtures_package() -> None:
    wrong = [
        f"{path.relative_to(TESTS.parent)}: {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for name in imported_modules(path)
        if name.startswith(".")
        or (name.split(".")[0] == "tests" and not name.startswith("tests.fixtures"))
    ]
    assert wrong == []
