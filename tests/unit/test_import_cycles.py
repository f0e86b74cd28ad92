"""No two modules of graph/ or tools/ import each other, directly or around a loop, counting
every import: at the top, inside a function, and under `TYPE_CHECKING` (issue 41: a cycle hidden
by a function-local import is still a cycle a reader has to hold in their head). And tools/
imports nothing from graph/ but its support helpers."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graph", "tools")


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_of(p): p
    for root in PACKAGES
    for p in (ROOT / root).rglob("*.py")
    if ".venv" not in str(p)
}


def imported(path: Path) -> set[str]:
    """The project's modules this file imports (a `from package import name` that names a
    module counts as an import of that module)."""
    found: set[str] = set()
    package = module_of(path) if path.name == "__init__.py" else module_of(path.parent)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    found.add(f"{base}.{alias.name}")
                elif base in MODULES:
                    found.add(base)
    return found - {module_of(path)}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_around_a_loop() -> None:
    # a package's __init__ that only re-exports its modules is not part of a loop through them
    edges = {
        name: {m for m in imported(path) if not name.startswith(f"{m}.")}
        for name, path in MODULES.items()
    }
    assert cycles(edges) == []


def test_tools_use_no_internals_of_the_graph() -> None:
    reached = {
        f"{name} -> {m}"
        for name, path in MODULES.items()
        if name.startswith("tools")
        for m in imported(path)
        if m.startswith("graph")
    }
    assert reached == set()
