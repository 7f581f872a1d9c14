"""The packages depend on each other in one direction only (fast, no fakes: it reads the source).

    contract  <-  planner, executors, retrieval  <-  serving  <-  benchmarks

`contract` (plan model, condition language, error root, shared protocols) imports no other planstack
package; planner, executors and retrieval import only `contract` (never each other); serving may
import all of them; only benchmarks may import serving. Every import counts, including those inside
functions and under `TYPE_CHECKING`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contract", "planner", "executors", "retrieval", "serving", "benchmarks")
ALLOWED: dict[str, set[str]] = {
    "contract": set(),
    "planner": {"contract"},
    "executors": {"contract"},
    "retrieval": {"contract"},
    "serving": {"contract", "planner", "executors", "retrieval"},
    "benchmarks": {"contract", "planner", "executors", "retrieval", "serving"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(PACKAGES)


def package_edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for target in imported_packages(path) - {package}:
                edges.setdefault((package, target), []).append(str(path.relative_to(ROOT)))
    return edges


def test_every_package_imports_only_the_layers_below_it() -> None:
    wrong = {
        f"{source} -> {target}": files
        for (source, target), files in package_edges().items()
        if target not in ALLOWED[source]
    }
    assert wrong == {}


def test_the_package_graph_has_no_cycle() -> None:
    graph: dict[str, set[str]] = {p: set() for p in PACKAGES}
    for source, target in package_edges():
        graph[source].add(target)
    state: dict[str, int] = {}

    def visit(node: str, trail: tuple[str, ...]) -> None:
        if state.get(node) == 1:
            pytest.fail("import cycle: " + " -> ".join((*trail, node)))
        if state.get(node) == 2:
            return
        state[node] = 1
        for target in sorted(graph[node]):
            visit(target, (*trail, node))
        state[node] = 2

    for package in PACKAGES:
        visit(package, ())


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from executors.tools import x\n    import serving.app\n")
    assert imported_packages(module) == {"executors", "serving"}
