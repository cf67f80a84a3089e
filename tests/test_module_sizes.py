"""No module of hangar over 350 lines and no function over 60 (issue 43 point 1): past that a
module holds more than one job, and a function more than one step. A module is counted by its
lines; a function from its `def` line to its last line (a method, or a function nested in
another, counts on its own as well). What is left over is named below, each with why."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "hangar"
MOST_MODULE_LINES = 350
MOST_FUNCTION_LINES = 60

# The migrations are frozen history: each is what ran on every database, never edited since.
FROZEN = "db/migrations/versions/"

# Modules over the limit, by their path under src/hangar.
LONG_MODULES: set[str] = set()
# Functions over the limit: (the module's path under src/hangar, the function's dotted name).
LONG_FUNCTIONS: set[tuple[str, str]] = set()


def modules() -> dict[str, str]:
    """Each module of hangar but the frozen migrations: its path under src/hangar, its text."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if not name.startswith(FROZEN):
            found[name] = path.read_text()
    return found


def functions(tree: ast.AST, outer: str = "") -> Iterator[tuple[str, int]]:
    """Each function in `tree`, however deep, by its dotted name, with its length in lines."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{outer}{node.name}"
            if not isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                yield name, node.end_lineno - node.lineno + 1
            yield from functions(node, f"{name}.")
        else:
            yield from functions(node, outer)


def module_sizes() -> dict[str, int]:
    return {name: len(text.splitlines()) for name, text in modules().items()}


def function_sizes() -> dict[tuple[str, str], int]:
    return {
        (name, function): lines
        for name, text in modules().items()
        for function, lines in functions(ast.parse(text, name))
    }


def test_no_module_is_over_350_lines() -> None:
    long = [
        f"src/hangar/{name}: {lines} lines"
        for name, lines in module_sizes().items()
        if lines > MOST_MODULE_LINES and name not in LONG_MODULES
    ]
    assert long == [], f"split by what each part does, to {MOST_MODULE_LINES} lines at most"


def test_no_function_is_over_60_lines() -> None:
    long = [
        f"src/hangar/{name}: {function}, {lines} lines"
        for (name, function), lines in function_sizes().items()
        if lines > MOST_FUNCTION_LINES and (name, function) not in LONG_FUNCTIONS
    ]
    assert long == [], f"split into named steps, to {MOST_FUNCTION_LINES} lines at most"


def test_what_is_left_over_is_still_too_long() -> None:
    # An entry for what has been split (or moved) goes from the lists above with it.
    modules, functions = module_sizes(), function_sizes()
    left = [
        f"src/hangar/{name}: {_lines(modules.get(name))}"
        for name in sorted(LONG_MODULES)
        if modules.get(name, 0) <= MOST_MODULE_LINES
    ] + [
        f"src/hangar/{name}: {function}, {_lines(functions.get((name, function)))}"
        for name, function in sorted(LONG_FUNCTIONS)
        if functions.get((name, function), 0) <= MOST_FUNCTION_LINES
    ]
    assert left == [], "no longer too long: take it out of LONG_MODULES or LONG_FUNCTIONS"


def _lines(count: int | None) -> str:
    return "not there any more" if count is None else f"{count} lines"
