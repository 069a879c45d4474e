"""The graph's version token (GraphStore.graph_version, ``graph.version`` beside the database):
every kind of write changes it before the write starts, an open or a read does not, a graph
without one is unknown, and no write path of store.py runs a statement without the change."""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from kgviz.errors import GraphStoreError
from kgviz.graph import search, writes
from kgviz.graph import store as store_module
from kgviz.graph.store import VERSION_FILENAME, GraphStore

DIM = 8
ROOT = Path(__file__).resolve().parents[2]


def _vec(i: int) -> list[float]:
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    return v.tolist()


def _on_disk(store: GraphStore) -> str | None:
    return store_module._read_version(store.path / VERSION_FILENAME)


@pytest.fixture()
def store(tmp_path: Path) -> Any:
    s = GraphStore.open(tmp_path / "ws", embedder_id="hashing-8", dim=DIM)
    s.bulk_load_nodes("Chunk", [{"id": f"c{i}", "doc_id": "d", "ord": i, "text": f"chunk {i}", "emb": _vec(i)} for i in range(3)])
    s.bulk_load_nodes("Entity", [{"id": f"e{i}", "name": f"E{i}", "origin": "corpus", "emb": _vec(i)} for i in range(3)])
    s.bulk_load_nodes("Triple", [{"id": "t0", "subject": "E0", "relation": "r", "object": "E1", "emb": _vec(0)}])
    yield s
    s.close()


# one of each kind of write a kgviz process makes (store.py's methods, kgviz.graph.writes, search's index creation)
WRITES: dict[str, Callable[[GraphStore, Path], Any]] = {
    "execute": lambda s, _: s.execute("MATCH (c:Chunk {id: 'c0'}) SET c.text = $t", {"t": "changed"}),
    "set_meta": lambda s, _: s.set_meta("some.key", "v"),
    "delete_meta": lambda s, _: s.delete_meta("dim_never_set"),
    "bulk_load_nodes (COPY)": lambda s, _: s.bulk_load_nodes("Entity", [{"id": "e9", "name": "E9", "emb": _vec(9)}]),
    "bulk_load_nodes new_rows": lambda s, _: s.bulk_load_nodes("Entity", [{"id": "e8", "name": "E8"}], new_rows=True),
    "bulk_load_rels (COPY)": lambda s, _: s.bulk_load_rels("MENTIONS", [{"from": "c0", "to": "e0"}], from_table="Chunk",
                                                           to_table="Entity"),
    "copy_edges_into_empty (COPY from a file)": lambda s, scratch: s.copy_edges_into_empty(
        "SUBJ", [[{"from": "t0", "to": "e0"}]], scratch, from_table="Triple", to_table="Entity"),
    "transaction": lambda s, _: _in_transaction(s),
    "writes._update (LOAD FROM)": lambda s, _: writes.set_chunk_ranks(s, [{"id": "c1", "pr": 0.5, "core": True}]),
    "writes delete": lambda s, _: writes.delete_knn(s),
    "vector index": lambda s, _: s.ensure_vector_index("Chunk"),
    "fts index": lambda s, _: s.ensure_fts_index("Chunk"),
    "checkpoint": lambda s, _: s._statement("CHECKPOINT", None, write=True, fetch="none"),
}


def _in_transaction(s: GraphStore) -> None:
    with s.transaction():
        s.execute("MATCH (c:Chunk {id: 'c2'}) SET c.ord = 7")


@pytest.mark.parametrize("kind", sorted(WRITES))
def test_every_kind_of_write_changes_the_version(store: GraphStore, tmp_path: Path, kind: str) -> None:
    before = store.graph_version()
    assert before is not None and _on_disk(store) == before
    WRITES[kind](store, tmp_path)
    after = store.graph_version()
    assert after is not None and after != before
    assert _on_disk(store) == after  # recorded beside the database for the next process


def test_the_version_changes_before_the_statement_runs(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash in the middle of a write leaves a token that no stored copy matches: the file holds
    the new one by the time Kùzu runs the statement (and after a statement Kùzu rejects)."""
    before = store.graph_version()
    seen: list[str | None] = []
    real = store_module._run

    def spy(conn: Any, cypher: str, params: Any, prepared: Any = None) -> Any:
        if "SET" in cypher:
            seen.append(_on_disk(store))
            raise SystemExit("killed in the middle of the write")
        return real(conn, cypher, params, prepared)

    monkeypatch.setattr(store_module, "_run", spy)
    with pytest.raises(SystemExit):
        store.execute("MATCH (c:Chunk {id: 'c0'}) SET c.text = 'x'")
    assert seen and seen[0] is not None and seen[0] != before
    monkeypatch.setattr(store_module, "_run", real)
    crashed = store.graph_version()
    assert crashed == seen[0]
    with pytest.raises(GraphStoreError):
        store.execute("MATCH (c:NoSuchTable) SET c.x = 1")
    assert store.graph_version() not in (before, crashed)


def test_writes_change_the_file_once_until_the_version_is_handed_out(store: GraphStore,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    real = store_module._write_version
    monkeypatch.setattr(store_module, "_write_version", lambda path, token: (written.append(token), real(path, token)))
    store.graph_version()
    for i in range(5):
        store.set_meta(f"k{i}", i)
    assert len(written) == 1  # a build's many statements write the file once
    store.graph_version()
    store.set_meta("k", 1)
    assert len(written) == 2


def test_reads_and_opens_keep_the_version(store: GraphStore, tmp_path: Path) -> None:
    token = store.graph_version()
    store.query("MATCH (c:Chunk) RETURN c.id")
    store.vector_search("Chunk", _vec(1), 2)
    store.close()
    for read_only in (False, True):  # an open applies the schema only where a table is missing
        with GraphStore.open(tmp_path / "ws", read_only=read_only) as again:
            assert again.graph_version() == token
            assert again.counts()["Chunk"] == 3


def test_a_graph_without_a_version_is_unknown(store: GraphStore, tmp_path: Path) -> None:
    old = store.graph_version()
    store.close()
    version_file = tmp_path / "ws" / VERSION_FILENAME
    for damage in (None, "not json", json.dumps({"format": 1, "token": "short"}), json.dumps({"format": 99, "token": old})):
        if damage is None:
            version_file.unlink()  # a graph built before kgviz kept one
        else:
            version_file.write_text(damage)
        with GraphStore.open(tmp_path / "ws") as again:
            token = again.graph_version()
            assert token is not None and token != old  # a new one, never the one copies may be stored under
            assert store_module._read_version(version_file) == token
            old = token


def test_a_version_that_cannot_be_recorded_stops_the_write(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.graph_version()

    def fail(path: Path, token: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_module, "_write_version", fail)
    store.set_meta("a", 1)  # the old token is removed instead: no token is "unknown"
    assert _on_disk(store) is None and store.get_meta("a") == "1"
    assert store.graph_version() is None  # nothing may be stored under it
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: fail(self, ""))
    store.set_meta("b", 1)  # not handed out: nothing to change
    with pytest.raises(GraphStoreError, match="version file"):
        store._handle.version_handed_out = True
        store.set_meta("c", 1)
    assert store.get_meta("c") is None  # the write did not start


# --- every statement of store.py passes the version change ------------------------------------------
def _functions(tree: ast.AST) -> dict[str, ast.FunctionDef]:
    out: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out[f"{node.name}.{item.name}"] = item
    for node in tree.body:  # type: ignore[attr-defined]
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
    return out


def _calls(fn: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(fn) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Attribute) and n.func.attr == name) or (isinstance(n.func, ast.Name) and n.func.id == name))]


def test_store_runs_statements_only_through_the_version_change() -> None:
    """Kùzu runs a statement in store.py only in ``_run`` (``conn.execute``), ``_run`` is called only
    by ``_Handle.run``, and there a write changes the version before ``_run``. A new write path
    that runs a statement another way fails here."""
    tree = ast.parse((ROOT / "kgviz" / "graph" / "store.py").read_text("utf-8"))
    functions = _functions(tree)
    executing = {name for name, fn in functions.items() if _calls(fn, "execute") and any(
        isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name) and c.func.value.id == "conn"
        for c in _calls(fn, "execute"))}
    assert executing == {"_run"}
    callers = {name for name, fn in functions.items() if any(isinstance(c.func, ast.Name) for c in _calls(fn, "_run"))}
    assert callers == {"_Handle.run"}
    run = functions["_Handle.run"]
    branch = ast.Module(body=next(n for n in ast.walk(run) if isinstance(n, ast.If) and isinstance(n.test, ast.Name)
                                  and n.test.id == "write").body, type_ignores=[])
    bump = [c.lineno for c in _calls(branch, "new_version")]
    statement = [c.lineno for c in _calls(branch, "_run")]
    assert bump and statement and max(bump) < min(statement)
    # kuzu objects that run statements are made only where the handle holds them
    makers = {name for name, fn in functions.items() for c in ast.walk(fn) if isinstance(c, ast.Call)
              and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name) and c.func.value.id == "kuzu"
              and c.func.attr in ("Database", "Connection", "PreparedStatement")}
    assert makers <= {"_Handle.__init__", "_Handle._connection", "_Handle.prepared"}


def test_outside_store_py_no_statement_runs_as_a_write_past_it() -> None:
    """Modules that reach the handle (search.py's projected graphs, which live in memory and
    change nothing stored) run reads only; every other module writes through GraphStore."""
    for path in sorted((ROOT / "kgviz").rglob("*.py")):
        if path.name == "store.py" and path.parent.name == "graph":
            continue
        tree = ast.parse(path.read_text("utf-8"))
        for call in _calls(tree, "run"):
            owner = call.func.value if isinstance(call.func, ast.Attribute) else None
            if not (isinstance(owner, ast.Attribute) and owner.attr == "_handle"):
                continue
            write = next((k.value for k in call.keywords if k.arg == "write"), None)
            assert isinstance(write, ast.Constant) and write.value is False, f"{path}:{call.lineno}"
            text = ast.unparse(call.args[1])
            assert "PROJECT_GRAPH" in text or "PROJECTED_GRAPH" in text or text == "project", f"{path}:{call.lineno}: {text}"
        for call in _calls(tree, "_statement"):
            raise AssertionError(f"{path}:{call.lineno} runs a statement past GraphStore's write path")
    assert search.PRESENT  # the module scanned above is the one the store delegates to


def test_an_open_creates_a_missing_table_and_that_is_a_write(store: GraphStore, tmp_path: Path) -> None:
    store.execute("DROP TABLE Description")
    token = store.graph_version()
    store.close()
    with GraphStore.open(tmp_path / "ws") as again:
        assert "Description" in again.counts()  # the schema's table is back
        assert again.graph_version() != token
