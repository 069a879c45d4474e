"""The import graph of the ``kgviz`` package, read with ``ast`` (nothing is imported).

Two graphs over modules (one node per .py file; a package is its ``__init__``):
* ``top_level``: imports that run when the module is imported (not inside a function, not under
  ``if TYPE_CHECKING``) - a cycle here can break at import time;
* ``every``: all of them, function-level and type-only included - a cycle here is a layering knot
  even when deferring one import keeps it from crashing.
``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "kgviz"


@dataclass
class ImportGraph:
    top_level: dict[str, set[str]] = field(default_factory=dict)
    every: dict[str, set[str]] = field(default_factory=dict)


def module_name(path: Path, root: Path = PACKAGE_DIR) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, modules: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
        return subs if len(subs) == len(node.names) else [*subs, node.module]
    return []


def _owner(name: str, modules: set[str]) -> str | None:
    """The module that ``import name`` executes last (``a.b.func`` -> ``a.b``); None outside kgviz."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def build(root: Path = PACKAGE_DIR) -> ImportGraph:
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    graph = ImportGraph()
    for name, path in files.items():
        top, every = graph.top_level.setdefault(name, set()), graph.every.setdefault(name, set())

        def walk(node: ast.AST, deferred: bool) -> None:
            deferred = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) \
                or _is_type_checking(node)
            for target in _targets(node, modules):
                owner = _owner(target, modules)
                if owner is not None and owner != name:
                    every.add(owner)
                    if not deferred:
                        top.add(owner)
            for child in ast.iter_child_nodes(node):
                walk(child, deferred)

        walk(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return graph


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def package_of(module: str) -> str:
    """``kgviz.index.ket`` -> ``kgviz.index``; top-level modules (``kgviz.compare``) are their own unit."""
    return ".".join(module.split(".")[:2])


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph ``edges`` at package granularity (``package_of``): package -> the packages
    it imports, itself excluded; every package is a key, importing nothing or not."""
    out: dict[str, set[str]] = {package_of(m): set() for m in edges}
    for a, b in package_edges(edges):
        out[a].add(b)
    return out


def package_edges(edges: dict[str, set[str]]) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(package a, package b) -> the module imports behind a's dependence on b."""
    out: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for src, targets in edges.items():
        for dst in targets:
            a, b = package_of(src), package_of(dst)
            if a != b:
                out.setdefault((a, b), set()).add((src, dst))
    return out
