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


SETTINGS = ("HANGAR_TEST_DATABASE_URL", "HANGAR_TEST_REDIS_URL")


def reads_a_setting(node: ast.AST) -> bool:
    """`os.environ.get(NAME)`, `os.getenv(NAME)` or `os.environ[NAME]` of one of SETTINGS."""
    if isinstance(node, ast.Call) and node.args:
        first = node.args[0]
        return isinstance(first, ast.Constant) and first.value in SETTINGS
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return isinstance(node.slice, ast.Constant) and node.slice.value in SETTINGS
    return False


def test_only_the_environment_module_reads_the_test_databases_settings() -> None:
    # The PostgreSQL + Redis pass repeats the tests that use them, found from what each test
    # names (tests/fixtures/placement.py): a test reading the variables itself would be missed.
    readers = [
        str(path.relative_to(TESTS.parent))
        for path in sorted(TESTS.rglob("*.py"))
        if "node_modules" not in path.parts
        and path != TESTS / "fixtures" / "environment.py"
        and any(map(reads_a_setting, ast.walk(ast.parse(path.read_text(), str(path)))))
    ]
    assert readers == []
