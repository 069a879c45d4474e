"""Every Cypher statement of the package lives in kgviz/graph/ (issue 11).

The scan reads string literals (f-string parts and implicitly joined literals included, docstrings
excluded) and flags those that look like Cypher: a clause keyword in capitals followed by what
Cypher puts after it. SQL of the LLM cache (``CREATE TABLE ...``) and prose such as "bulk COPY
vs per-row CREATE" do not match.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import kgviz

PACKAGE = Path(kgviz.__file__).parent
CYPHER = re.compile(
    r"\bMATCH\s*\(|\bMERGE\s*\(|\bUNWIND\s+\$|\bCALL\s+\w+\s*\(|\bRETURN\s+[\w*]|\bCOPY\s+\w+\s+FROM\b"
    r"|\bCREATE\s+(NODE|REL)\s+TABLE\b|\bCREATE\s*\(|\bDETACH\s+DELETE\b"
)
# Files allowed to hold Cypher outside kgviz/graph/: none since issue 11 (the UI and viz read
# through the named functions of kgviz/graph/). Kept so a future exception is explicit and exact.
ALLOWED: set[str] = set()


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def cypher_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
            and CYPHER.search(node.value)]


def _offenders() -> dict[str, list[tuple[int, str]]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if rel.startswith("kgviz/graph/"):
            continue
        hits = cypher_literals(path)
        if hits:
            found[rel] = hits
    return found


def test_no_cypher_outside_kgviz_graph() -> None:
    offenders = {f: hits for f, hits in _offenders().items() if f not in ALLOWED}
    assert offenders == {}, "Cypher outside kgviz/graph/: move it behind a named function there"


def test_the_allow_list_is_exact() -> None:
    assert set(_offenders()) == ALLOWED


def test_the_scan_sees_cypher(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text('"""MATCH (n) RETURN n in a docstring is prose."""\n'
                      'Q = ("MATCH (e:Entity) "\n     "RETURN e.id")\n'
                      'W = f"UNWIND $ids AS k MATCH (c:{t}) WHERE c.id = k"\n'
                      'SQL = "CREATE TABLE IF NOT EXISTS completions (k TEXT)"\n'
                      'PROSE = "bulk COPY vs per-row CREATE"\n', encoding="utf-8")
    assert [line for line, _ in cypher_literals(sample)] == [2, 4]
    assert cypher_literals(PACKAGE / "graph" / "reads.py")  # the statements do live there


def test_the_store_satisfies_the_graph_store_protocol(tmp_path: Path) -> None:
    from kgviz.graph.protocol import GraphStore as Protocol
    from kgviz.graph.store import GraphStore

    with GraphStore.open(tmp_path / "ws", embedder_id="hashing-8", dim=8) as store:
        assert isinstance(store, Protocol)
    missing = [name for name in dir(Protocol) if not name.startswith("_") and not hasattr(GraphStore, name)
               and name not in Protocol.__annotations__]
    assert missing == []


def test_graph_search_does_not_import_the_store() -> None:
    tree = ast.parse((PACKAGE / "graph" / "search.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert "kgviz.graph.store" not in imported


def test_only_the_store_imports_kuzu() -> None:
    importers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        names |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        if "kuzu" in names:
            importers.append(path.relative_to(PACKAGE.parent).as_posix())
    assert importers == ["kgviz/graph/store.py"]
