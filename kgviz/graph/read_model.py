"""The read model stored in the workspace: the tables the in-memory reads are made from (triples,
entities and their links, chunk links, documents, sub-chunk texts, entity names), kept as Arrow
files and memory-mapped by the next process instead of read out of Kùzu again (issue 29: ~1–1.5 s
of the first question at 10,000 passages, more at 100,000).

A stored table is used only for the graph it was read from. What names that graph is its key:

* the graph's version token (``GraphStore.graph_version``), which every write through the store
  changes before it starts, so a write, or a crash in the middle of one, leaves a token that no
  stored table matches; a graph without a token (built before kgviz kept one) gets a new one;
* the row counts of the node tables read: a writer that does not know the token (an older
  kgviz, a Kùzu shell) is caught when it adds or removes nodes (any build of new text does). One
  that only changes values or edges is not: such a writer is outside what this key can see (the
  edge tables' counts were left out: at 10,000 passages they cost ~0.1 s a process, the nodes'
  ~1 ms, and an edge-only rewrite can keep its count anyway);
* the statement's text (a table of another statement is another file).

Files: ``<workspace>/read_model/<key>/<statement digest>.arrow``, an Arrow IPC file (uncompressed,
so mapping it costs no decoding) whose schema metadata repeats the key, the statement and the row
count. A file is written aside and renamed, so a reader sees a whole one or none; a file that does
not open, or does not hold what its metadata says, is made again (logged). Storing the first table
of a new key removes the folders of other keys (stale). A workspace that cannot be written keeps
the tables in memory only (logged once per key), as before they were stored.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from kgviz.errors import DiskFullError
from kgviz.graph import vector_file
from kgviz.graph.protocol import GraphStore

FOLDER = "read_model"
FORMAT = 1
META_FIELD = b"kgviz.read_model"
KEY_DERIVED = "graph.read_model_key"
# the node tables the read model's statements read (fixed names of the schema, the only text put
# into the count statement below); their row counts are part of the key
COUNTED_NODES = ("Document", "Chunk", "SubChunk", "Entity", "Triple")
log = logging.getLogger(__name__)
_LOCK = threading.Lock()  # one writer of the folder at a time in this process (one process per graph)
_UNSTORED: set[tuple[str, str]] = set()  # (workspace, key) whose folder could not be written: logged once


def _key(store: GraphStore) -> str | None:
    """The stored tables' key for the graph as it is now; None when the graph has no version that
    can be recorded (nothing is stored or used then). The token is read before the counts: a write
    in between gives the graph a new token, so the key never names rows it did not count."""
    token = store.graph_version()
    if token is None:
        return None
    counts = {t: int(store.query(f"MATCH (n:{t}) RETURN count(n) AS n")[0]["n"]) for t in COUNTED_NODES}
    text = json.dumps({"format": FORMAT, "token": token, "counts": counts}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def current_key(store: Any) -> str | None:
    """The key, worked out once per state of the database (``GraphStore.derived``)."""
    key: str | None = store.derived(KEY_DERIVED, _key)
    return key


def folder(store: Any) -> Path:
    return Path(store.path) / FOLDER


def _path(store: GraphStore, key: str, query: str) -> Path:
    return folder(store) / key / f"{hashlib.sha256(query.encode()).hexdigest()[:20]}.arrow"


def table(store: GraphStore, query: str) -> pa.Table:
    """What ``store.query_arrow(query)`` gives (a statement without parameters, reading the
    graph): mapped from the workspace when stored for the graph as it is, else read from Kùzu and
    stored there for the next process."""
    key = current_key(store)
    if key is None:
        return store.query_arrow(query)
    path = _path(store, key, query)
    found = _load(path, key, query)
    if found is not None:
        return found
    got = store.query_arrow(query)
    _store(store, key, query, path, got)
    return got


def _metadata(key: str, query: str, rows: int) -> dict[bytes, bytes]:
    return {META_FIELD: json.dumps({"format": FORMAT, "key": key, "query": query, "rows": rows}).encode()}


def _load(path: Path, key: str, query: str) -> pa.Table | None:
    """The table stored at ``path``, memory-mapped; None when there is none or it is damaged."""
    if not path.is_file():  # none stored (or no folder to hold one)
        return None
    try:
        source = pa.memory_map(str(path), "r")
    except OSError as err:
        log.warning("%s: the stored read-model table cannot be opened (%s); it is read from the graph again", path, err)
        return None
    try:
        got = pa.ipc.open_file(source).read_all()
        meta = json.loads((got.schema.metadata or {}).get(META_FIELD, b"null"))
        if meta != {"format": FORMAT, "key": key, "query": query, "rows": got.num_rows}:
            raise ValueError(f"it holds {meta}")
        got.validate(full=True)  # offsets within their buffers, valid UTF-8: a damaged file never reaches a read
    except (OSError, ValueError, pa.ArrowException) as err:
        log.warning("%s: the stored read-model table is damaged (%s); it is read from the graph again", path, err)
        return None
    return got.replace_schema_metadata(None)


def _key_folder(store: Any, key: str) -> Path:
    """The folder of ``key``, made when missing; making it removes the other keys' folders
    (stale: stored for a graph that is no longer there). Called under _LOCK."""
    path = folder(store) / key
    if not path.is_dir():
        for stale in folder(store).glob("*"):
            if stale.is_dir() and stale.name != key:
                shutil.rmtree(stale, ignore_errors=True)
        path.mkdir(parents=True, exist_ok=True)
    return path


def _not_stored(store: Any, key: str, where: Path, err: Exception) -> None:
    if (str(store.path), key) not in _UNSTORED:
        _UNSTORED.add((str(store.path), key))
        log.warning("read model not stored in %s (%s): each process will read it from the graph", where, err)


def _store(store: GraphStore, key: str, query: str, path: Path, got: pa.Table) -> None:
    """Write ``got`` to ``path`` (aside, then renamed); the first file of a key removes the other
    keys' folders. A folder that cannot be written is logged once per key, not raised: the reads
    are answered from the table in memory either way."""
    with _LOCK:
        try:
            _key_folder(store, key)
            with vector_file.temporary_files(path.parent) as suffix:
                aside = Path(str(path) + suffix)
                stamped = got.replace_schema_metadata(_metadata(key, query, got.num_rows))
                with pa.OSFile(str(aside), "wb") as sink, pa.ipc.new_file(sink, stamped.schema) as writer:
                    writer.write_table(stamped)
                os.replace(aside, path)
        except (OSError, DiskFullError) as err:
            _not_stored(store, key, path.parent, err)


# --- small values worked out from the graph, kept under the same key ----------------------------------
VALUES_FILE = "values.json"


def remembered(store: Any, key: str | None, name: str, make: Callable[[], Any]) -> Any:
    """``make()`` (a JSON value worked out from the graph, e.g. a table's id digest), kept in the
    workspace under ``key`` (``current_key``, taken by the caller before any lock of its own) so
    the next process takes it without the reads it costs; made afresh when ``key`` is None, when
    none is kept for it, or when the kept file is damaged."""
    if key is None:
        return make()
    path = folder(store) / key / VALUES_FILE
    kept = _values(path)
    if name in kept:
        return kept[name]
    value = make()
    with _LOCK:
        try:
            _key_folder(store, key)
            kept = {**_values(path), name: value}
            with vector_file.temporary_files(path.parent) as suffix:
                aside = Path(str(path) + suffix)
                aside.write_text(json.dumps(kept), "utf-8")
                os.replace(aside, path)
        except (OSError, DiskFullError) as err:
            _not_stored(store, key, path.parent, err)
    return value


def _values(path: Path) -> dict[str, Any]:
    try:
        kept = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        log.warning("%s: the stored values are damaged (%s); they are worked out again", path, err)
        return {}
    return kept if isinstance(kept, dict) else {}


def stored_tables(store: GraphStore) -> list[Path]:
    """The stored files (tests, benchmarks)."""
    return sorted(folder(store).glob("*/*.arrow"))
