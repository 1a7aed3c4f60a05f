"""The import graph of a package, read with `ast` (nothing is imported), and what is wrong
with it: cycles, imports across layers the wrong way, imports of modules that do not exist.

Every `import`/`from … import` counts, wherever it stands: at module level, inside a
function, under `if TYPE_CHECKING:`. A function-level import still ties the two modules
together (it only moves the failure from import time to call time), and a type-only import
is still a module that must be read to understand this one.

`from ondeck.services import backlog` is an edge to `ondeck.work.backlog` (the name is a
module); `from ondeck.work.backlog import Task` is an edge to `ondeck.work.backlog`.
Importing a submodule runs its parents' `__init__` too, but that is not counted: otherwise
every package whose `__init__` imports one of its own modules would be a cycle.
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    path: Path
    line: int

    def __str__(self) -> str:
        where = f"{self.path.parent.name}/{self.path.name}:{self.line}"
        return f"{self.source} -> {self.target} ({where})"


@dataclass(frozen=True, slots=True)
class Graph:
    modules: dict[str, Path]
    edges: list[Edge]
    # Imports of `package.…` names that are neither a module nor a package of it.
    unresolved: list[Edge]

    def targets(self, source: str) -> set[str]:
        return {e.target for e in self.edges if e.source == source}

    def edge(self, source: str, target: str) -> Edge:
        return next(e for e in self.edges if e.source == source and e.target == target)


def module_name(root: Path, file: Path, package: str) -> str:
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def read_graph(root: Path, package: str) -> Graph:
    """Every module under `root` (the directory of `package`) and its imports of `package`."""
    modules = {module_name(root, f, package): f for f in sorted(root.rglob("*.py"))}
    edges: dict[tuple[str, str], Edge] = {}
    unresolved: list[Edge] = []
    for source, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for target, line in _imported(node, source, is_package, modules):
                if target != package and not target.startswith(package + "."):
                    continue
                edge = Edge(source, target, path, line)
                if target not in modules:
                    unresolved.append(edge)
                elif target != source:
                    edges.setdefault((source, target), edge)
    return Graph(modules=modules, edges=list(edges.values()), unresolved=unresolved)


def _imported(
    node: ast.AST, source: str, is_package: bool, modules: dict[str, Path]
) -> Iterable[tuple[str, int]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, node.lineno
    elif isinstance(node, ast.ImportFrom):
        base = _absolute(node, source, is_package)
        for alias in node.names:
            # `from pkg import name`: the submodule when there is one of that name, else
            # an attribute of pkg (the edge is to pkg).
            candidate = f"{base}.{alias.name}"
            yield (candidate if candidate in modules else base), node.lineno


def _absolute(node: ast.ImportFrom, source: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    parts = source.split(".")
    # In a package's __init__, `.` is the package itself; in a module, its parent.
    keep = len(parts) - node.level + (1 if is_package else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


@dataclass(frozen=True, slots=True)
class Cycle:
    """Modules that import each other (a strongly connected component of the graph), with
    one shortest loop through them to show where."""

    members: frozenset[str]
    path: list[str]


def cycles(graph: Graph) -> list[Cycle]:
    """Every group of more than one module that import each other, round any loop."""
    return [
        Cycle(members=frozenset(c), path=_shortest_cycle(graph, c))
        for c in _components(graph)
        if len(c) > 1
    ]


def describe_cycle(graph: Graph, cycle: Cycle) -> str:
    steps = [str(graph.edge(a, b)) for a, b in itertools.pairwise(cycle.path)]
    text = " -> ".join(cycle.path) + "\n    " + "\n    ".join(steps)
    rest = sorted(cycle.members - set(cycle.path))
    return text + (f"\n    (the loop also runs through {', '.join(rest)})" if rest else "")


def _components(graph: Graph) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    succ = {m: sorted(graph.targets(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[set[str]] = []
    counter = 0
    for start in graph.modules:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            recurse = False
            for j in range(i, len(succ[node])):
                nxt = succ[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                result.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return result


def _shortest_cycle(graph: Graph, component: set[str]) -> list[str]:
    best: list[str] | None = None
    for start in sorted(component):
        path = _path(graph, start, start, component)
        if path is not None and (best is None or len(path) < len(best)):
            best = path
    assert best is not None
    return best


def _path(graph: Graph, start: str, goal: str, within: set[str]) -> list[str] | None:
    """The shortest import path from `start` to `goal` (the same module: a cycle), staying
    within `within`, both ends included."""
    came: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph.targets(node) & within):
            if nxt == goal:
                path = [node]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [*reversed(path), goal]
            if nxt not in came and nxt != start:
                came[nxt] = node
                queue.append(nxt)
    return None


def violations(graph: Graph, allowed: Callable[[str, str], bool]) -> list[Edge]:
    return [e for e in graph.edges if not allowed(e.source, e.target)]
