"""The structure of `src/ondeck`, checked: no two modules import each other (directly or
round a longer loop, at module level or inside a function), each layer imports only the
layers below it, and every import of `ondeck.…` names a module that exists.

    core         pure: the clock, settings, rules, errors, validation     imports core
    db           tables, engines, migrations runner                       + db
    services     rules over a connection and an explicit `now`            + services
    entrypoints  CLI, API, dashboard, MCP, hooks, jobs loop, server       + entrypoints
    migrations   Alembic's env (db) and frozen revisions (db.types only)  imported by no one

The graph is read from the source with `ast` (tests/support/imports.py), nothing imported.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ondeck
from support.imports import Cycle, Graph, cycles, describe_cycle, read_graph, violations

SRC = Path(ondeck.__file__).parent
ORDER = ("core", "db", "services", "entrypoints")

# Cycles that another branch of the same issue removes, each with who removes it. An entry
# fails the test once its cycle is gone, so the list cannot outlive its reason.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"  # `ondeck` itself: the version, nothing else
    if parts[1] == "__main__":
        return "entrypoints"
    return parts[1]


def allowed(source: str, target: str) -> bool:
    """Whether `source` may import `target`."""
    here, there = layer(source), layer(target)
    if there == "package":
        return True  # `from ondeck import __version__`
    if here == "package":
        return False
    if here == "migrations":
        # A revision is a frozen snapshot: the column types are all it may take from the
        # app (the app's tables and models change; a released revision must not).
        if source.startswith("ondeck.migrations.versions."):
            return target == "ondeck.db.types"
        return there in ("core", "db")
    # Migrations run through `db.migrate` (Alembic finds them by name), never imported.
    if there == "migrations" or here not in ORDER or there not in ORDER:
        return False
    return ORDER.index(there) <= ORDER.index(here)


@pytest.fixture(scope="module")
def graph() -> Graph:
    return read_graph(SRC, "ondeck")


def _unexplained_cycles(graph: Graph) -> list[Cycle]:
    return [c for c in cycles(graph) if c.members not in KNOWN_CYCLES]


def test_the_graph_covers_every_module_and_layer(graph: Graph) -> None:
    """A reader that found nothing would pass everything below."""
    assert len(graph.modules) == len(list(SRC.rglob("*.py")))
    assert {layer(m) for m in graph.modules} == {"package", *ORDER, "migrations"}
    assert "ondeck.context.build" in graph.targets("ondeck.entrypoints.gateway")
    assert "ondeck.core.models" in graph.targets("ondeck.context.build")


def test_no_two_modules_import_each_other(graph: Graph) -> None:
    found = _unexplained_cycles(graph)
    assert not found, "modules that import each other:\n" + "\n".join(
        describe_cycle(graph, c) for c in found
    )


def test_each_known_cycle_still_exists(graph: Graph) -> None:
    """A known cycle that is gone must leave KNOWN_CYCLES with it."""
    present = {c.members for c in cycles(graph)}
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in present]
    assert not gone, f"no longer cycles, remove them from KNOWN_CYCLES: {gone}"


def test_each_layer_imports_only_the_layers_below_it(graph: Graph) -> None:
    wrong = violations(graph, allowed)
    assert not wrong, "imports across layers the wrong way:\n" + "\n".join(
        f"  {e} ({layer(e.source)} may not import {layer(e.target)})" for e in wrong
    )


def test_every_import_of_ondeck_names_a_module_that_exists(graph: Graph) -> None:
    assert not graph.unresolved, "imports of modules that do not exist:\n" + "\n".join(
        f"  {e}" for e in graph.unresolved
    )


# --- the checker, checked ---------------------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in [root / "pkg", *(p for p in (root / "pkg").rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return root / "pkg"


def test_a_cycle_through_a_function_level_import_is_found_and_named(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "a.py": "from pkg.b import thing\n",
            "b.py": "thing = 1\n\ndef later():\n    from pkg import c\n",
            "c.py": "import pkg.a\n",
            "d.py": "from pkg.a import *\n",
        },
    )
    graph = read_graph(root, "pkg")
    [cycle] = cycles(graph)
    assert cycle.path == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    assert cycle.members == {"pkg.a", "pkg.b", "pkg.c"}
    described = describe_cycle(graph, cycle)
    assert "pkg.b -> pkg.c (pkg/b.py:4)" in described
    assert "pkg.c -> pkg.a (pkg/c.py:1)" in described


@pytest.mark.parametrize(
    "back",
    [
        "from pkg.one import x\n",  # a name from the module
        "from pkg import one\n",  # the module as a name of its package
        "from . import one\n",  # relative
        "from .one import x\n",
        "import pkg.one\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.one import x\n",
        "def f():\n    if True:\n        from pkg.one import x\n",
    ],
)
def test_every_form_of_import_counts(tmp_path: Path, back: str) -> None:
    root = _package(
        tmp_path, {"one.py": "x = 1\nfrom pkg.two import y\n", "two.py": "y = 2\n" + back}
    )
    [cycle] = cycles(read_graph(root, "pkg"))
    assert cycle.path == ["pkg.one", "pkg.two", "pkg.one"]


def test_a_package_importing_its_own_modules_is_no_cycle(tmp_path: Path) -> None:
    root = _package(tmp_path, {"sub/leaf.py": "from pkg.sub import helper\n", "sub/helper.py": ""})
    (root / "sub" / "__init__.py").write_text("from pkg.sub import leaf\n", encoding="utf-8")
    graph = read_graph(root, "pkg")
    assert cycles(graph) == []
    assert graph.targets("pkg.sub") == {"pkg.sub.leaf"}
    assert graph.targets("pkg.sub.leaf") == {"pkg.sub.helper"}


def test_a_missing_module_is_reported(tmp_path: Path) -> None:
    root = _package(tmp_path, {"a.py": "def f():\n    from pkg.gone import x\n"})
    [edge] = read_graph(root, "pkg").unresolved
    assert (edge.source, edge.target, edge.line) == ("pkg.a", "pkg.gone", 2)


def _planted(tmp_path: Path, module: str, line: str) -> Graph:
    """The real source tree, copied, with one import added to one module."""
    copy = tmp_path / "ondeck"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / (module.removeprefix("ondeck.").replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + line + "\n", encoding="utf-8")
    return read_graph(copy, "ondeck")


def test_a_cycle_planted_in_the_real_tree_fails_the_test(tmp_path: Path) -> None:
    graph = _planted(
        tmp_path,
        "ondeck.context.build",
        "def _planted() -> None:\n    from ondeck.services import context_render",
    )
    with pytest.raises(AssertionError, match=r"context -> ondeck\.services\.context_render"):
        test_no_two_modules_import_each_other(graph)


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("ondeck.work.schedules", "from ondeck.entrypoints.jobs.loop import Jobs"),
        ("ondeck.core.rules", "from ondeck.db.tables import tasks"),
        ("ondeck.db.tables", "from ondeck.services import backlog"),
        ("ondeck.work.backlog", "import ondeck.migrations.env"),
        ("ondeck.migrations.versions.0001_initial_schema", "from ondeck.db import tables"),
    ],
)
def test_an_import_across_layers_planted_in_the_real_tree_fails_the_test(
    tmp_path: Path, module: str, line: str
) -> None:
    graph = _planted(tmp_path, module, line)
    with pytest.raises(AssertionError, match="across layers the wrong way"):
        test_each_layer_imports_only_the_layers_below_it(graph)
