"""The docs cover what the code has, and point only at what exists.

- Every setting the code reads (a `HANGAR_*` name, and the `_FILE` form of each secret one)
  is in the docs; so is every command and subcommand of `hangar`, each with its options on
  its line of the commands reference, and every Prometheus metric hangar serves, by the
  name a scrape shows (a counter with its `_total`).
- No Markdown file of the repository names a path that is not there: in a code span
  (`src/hangar/...`, `tests/...`, `deploy/...`, `webhooks/delivery/states.py` inside src/hangar, a
  client's own `src/...`) or as a relative link, whose `#anchor` must be one of the target's
  headings; nor a `hangar.*` module or attribute that does not exist.
- The architecture names every top-level module of the layers contract; the clients' docs
  give their current versions.

CHANGELOG.md and bench/RESULTS.md are history, which names what was there then: not checked
for paths. Fenced code blocks are not read for paths either (shell lines, example output).
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main
from prometheus_client import REGISTRY

from hangar.cli import app
from hangar.foundation.config import FILE_SETTINGS
from hangar.http import metrics_endpoint
from hangar.retention.job import TABLES as PRUNED_TABLES
from hangar.wiring.worker import JOBS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "hangar"
DOCS = ROOT / "docs"
COMMANDS_DOC = DOCS / "operators" / "commands.md"
ARCHITECTURE_DOC = DOCS / "contributors" / "architecture.md"
CLIENTS_DOC = DOCS / "integrators" / "clients.md"
# What a build or a run makes: named by the docs, never in a checkout.
MADE = {"dist", "build", ".venv", "node_modules", "htmlcov"}

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`]+)`")  # a span may run over a line break
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
PATH_WORD = re.compile(r"[\w.@*-]+(?:/[\w.@*-]*)+")
MODULE = re.compile(r"hangar(?:\.\w+)+")
# The last part of a file's name, not a module's: `hangar.db.secret`, `hangar.env.example`.
FILE_ENDINGS = {"secret", "example", "db", "tar", "json", "md", "conf", "service", "timer"}


def markdown_files() -> list[Path]:
    """Every Markdown file of the repository that describes it as it is now."""
    found = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "SECURITY.md"]
    found += sorted(DOCS.rglob("*.md"))
    found += sorted(ROOT.glob("clients/*/README.md"))
    found += sorted((ROOT / "deploy").rglob("*.md"))
    return found


def docs_text() -> str:
    """README, CONTRIBUTING, SECURITY and docs/, as one text."""
    paths = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "SECURITY.md"]
    return "\n".join(p.read_text() for p in paths + sorted(DOCS.rglob("*.md")))


def named(name: str, text: str) -> bool:
    """`name` stands in `text` as a whole name (HANGAR_SECRET_KEY is not in
    HANGAR_SECRET_KEY_PREVIOUS, hangar_redis_up not in hangar_redis_upper)."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


# --- what the code has --------------------------------------------------------------------


def settings_the_code_reads() -> set[str]:
    """Every HANGAR_* name written as a string in hangar's modules (the settings it reads,
    and those `hangar serve --workers` hands its processes), and NAME_FILE for each setting
    that can come from a file. Not /docs's receiver snippets: their variables are the
    integrator's."""
    names = {f"{name}_FILE" for name in FILE_SETTINGS}
    for path in PACKAGE.rglob("*.py"):
        if "snippets" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and re.fullmatch(r"HANGAR_[A-Z0-9_]+", value):
                names.add(value)
    return names


def commands() -> dict[str, list[str]]:
    """`hangar` and each of its commands and subcommands, with the options each takes."""
    found: dict[str, list[str]] = {}

    def walk(command: object, path: str) -> None:
        options = [
            opt
            for param in getattr(command, "params", [])
            for opt in param.opts
            if opt.startswith("--")
        ]
        found[path] = options
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "hangar")
    return found


def metric_names() -> set[str]:
    """Every metric hangar serves, by the name a scrape shows: hangar's own families in the
    registry (a counter with `_total`), the build's and the queue's families that /metrics
    adds at each scrape."""
    names = set()
    for family in REGISTRY.collect():
        if family.name.startswith("hangar_"):
            names.add(f"{family.name}_total" if family.type == "counter" else family.name)
    names.update(family.name for family in metrics_endpoint._Build().collect())
    names.update(name for name, _help, _field in metrics_endpoint._GAUGES)
    return names


# --- what the docs name -------------------------------------------------------------------


def without_fences(text: str) -> str:
    """The text with its fenced code blocks blanked out, line count kept."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    plain = re.sub(r"[^\w\- ]", "", plain.strip().lower())
    return plain.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(without_fences(text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def repo_paths_in(text: str) -> Iterator[str]:
    """The words of code spans shaped like a relative path (`a/b`, `a/b.py`, `a/`, with
    `::test`, `#anchor` or `:line` after it taken off)."""
    for span in CODE_SPAN.findall(without_fences(text)):
        for word in span.split():
            match = PATH_WORD.match(word.strip("(),;'\"[]"))
            if match is None or word.startswith(("/", "~", ".venv", "$")) or "://" in word:
                continue
            yield match.group(0).split("::")[0]


def exists(word: str, where: list[Path]) -> bool:
    for base in where:
        if any(c in word for c in "*?["):
            if any(base.glob(word)):
                return True
        elif (base / word).exists():
            return True
    return False


def missing_paths(doc: Path, text: str) -> list[str]:
    """What `text` (the file `doc`) names in code spans that is in no checkout: words whose
    first part is a file or folder of the repository's root, of src/hangar or of the doc's
    own folder, but which lead nowhere from any of the three."""
    bases = [doc.parent, ROOT, PACKAGE]
    tops = {p.name for base in bases for p in base.iterdir()} - MADE
    return [
        word
        for word in repo_paths_in(text)
        if word.split("/")[0] in tops and not exists(word, bases)
    ]


def broken_links(doc: Path, text: str) -> list[str]:
    """Relative links that lead nowhere, or to a heading the target does not have."""
    broken = []
    for target in LINK.findall(without_fences(text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            continue  # another site, a mail address, or a page of hangar itself
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(target)
            continue
        if anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
            broken.append(target)
    return broken


def missing_modules(text: str) -> list[str]:
    """Code spans that are a dotted `hangar.*` name no module or attribute answers to."""
    missing = []
    for span in CODE_SPAN.findall(without_fences(text)):
        if not MODULE.fullmatch(span) or span.rsplit(".", 1)[1] in FILE_ENDINGS:
            continue
        parts = span.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            if found is None:
                missing.append(span)
            break
    return missing


# --- the tests ----------------------------------------------------------------------------


def test_every_setting_is_documented() -> None:
    settings = settings_the_code_reads()
    assert len(settings) > 20  # the walk finds what it means to
    text = docs_text()
    assert sorted(s for s in settings if not named(s, text)) == []


def test_every_command_is_in_the_commands_reference_with_its_options() -> None:
    """Each command has a line of docs/operators/commands.md that starts with it (after `| `
    and a backquote), and its lines name every option it takes; each scheduled job is
    `hangar jobs run JOB`."""
    lines = COMMANDS_DOC.read_text().splitlines()
    found = commands()
    assert len(found) > 20
    wrong = []
    for path, options in found.items():
        rows = [line for line in lines if re.match(rf"\| `{re.escape(path)}[ `]", line)]
        if not rows:
            wrong.append(f"{path}: no row")
        wrong += [f"{path} {opt}" for opt in options if not any(opt in row for row in rows)]
    for job in JOBS:
        if not any(line.startswith(f"| `hangar jobs run {job}`") for line in lines):
            wrong.append(f"hangar jobs run {job}: no row")
    assert wrong == []


def test_every_metric_is_documented() -> None:
    metrics = metric_names()
    assert len(metrics) > 20
    assert "hangar_http_requests_total" in metrics  # a counter, as a scrape names it
    text = docs_text()
    assert sorted(m for m in metrics if not named(m, text)) == []
    # hangar_retention_rows_pruned_total's `table` label: each value the job counts.
    observe = (DOCS / "operators" / "observe.md").read_text()
    assert [t for t in PRUNED_TABLES if not named(t, observe)] == []


@pytest.mark.parametrize("doc", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_doc_names_a_path_that_is_not_there(doc: Path) -> None:
    text = doc.read_text()
    assert missing_paths(doc, text) == []
    assert broken_links(doc, text) == []
    if "clients" not in doc.relative_to(ROOT).parts:  # there `hangar` is the client object
        assert missing_modules(text) == []


def test_the_readme_stays_a_front_page() -> None:
    """What hangar is, the two commands and a map of docs/: the rest lives there."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert "## The two commands" in readme
    assert "(docs/README.md)" in readme


def test_the_architecture_names_every_layer() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c.get("containers") == ["hangar"])["layers"]
    modules = [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]
    assert "webhooks" in modules
    text = ARCHITECTURE_DOC.read_text()
    assert [m for m in modules if not (named(f"{m}/", text) or named(f"{m}.py", text))] == []


def test_the_clients_docs_give_their_current_versions() -> None:
    version = re.search(
        r'VERSION = "(.+)"',
        (ROOT / "clients/python/src/hangar_client/_version.py").read_text(),
    )
    assert version is not None
    package = json.loads((ROOT / "clients/typescript/package.json").read_text())
    text = docs_text()
    for name, current in (("hangar_client", version[1]), ("hangar-client", package["version"])):
        given = set(re.findall(rf"`{name}` (\d+\.\d+\.\d+)", text))
        assert given == {current}, name


# --- the checks catch what they mean to ---------------------------------------------------


def test_the_checks_would_catch_a_missing_path_link_anchor_or_module(tmp_path: Path) -> None:
    doc = DOCS / "operators" / "backup.md"
    text = (
        "`src/hangar/gone.py`, `tests/test_docs.py::test_x`, `webhooks/` and `deploy/*.service`;"
        " `text/plain` and `/api/v1/x` are not paths. [a](deploy.md#deploying), "
        "[b](deploy.md#no-such-heading), [c](nowhere.md), [d](https://example.org/x.md).\n"
        "```sh\ncat src/hangar/also-gone.py\n```\n`hangar.foundation.config` `hangar.nothing`"
    )
    assert missing_paths(doc, text) == ["src/hangar/gone.py"]
    assert broken_links(doc, text) == ["deploy.md#no-such-heading", "nowhere.md"]
    assert missing_modules(text) == ["hangar.nothing"]


def test_the_checks_would_catch_an_undocumented_name() -> None:
    assert named("HANGAR_SECRET_KEY", "set `HANGAR_SECRET_KEY_PREVIOUS`") is False
    assert named("hangar_redis_up", "`hangar_redis_up` is 1") is True
    assert slug("Exposure: behind a `TLS` proxy") == "exposure-behind-a-tls-proxy"
