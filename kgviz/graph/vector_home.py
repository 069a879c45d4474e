"""Where a node table's embeddings are kept: in Kùzu's ``emb`` column, or only in the exact
search's vector files (kgviz.graph.vector_file), for the Document, Chunk, Entity and Triple tables
(issue 29).

Kùzu's COPY of a FLOAT[768] column was most of a build's write stage and its memory peak: at
100,000 passages a 131,072-row Triple batch took ~8.5 s of CPU with the column and ~1.2 s without
it, and the Triple COPY was the build's peak (4.9 GB); on 262,144 hashing rows, 13.7 s of CPU and
1.8 GB with the column, 0.45 s and 0.3 GB without (``benchmarks/vector_copy.py``; Kùzu's
compression on or off made no difference, a Parquet file was slower). With those two gone, the
Document and Chunk COPYs were the peak: at 100,000 passages the 99,760 Document rows took 18.7 s
with their vectors and raised the resident memory by 1.7 GB, 1.6 s and 0.4 GB without (load ~4).
Exact search and every read of stored vectors by id already use the vector files, which a build
writes from the vectors it spilled. So a build whose table is searched exactly loads the rows
without their vectors and the files become the vectors' only copy. One Meta row per table
(``KEY_PREFIX + table``) says which:

* no row: the vectors are in Kùzu (every workspace written before this module, a table the build
  found holding rows it did not write this way, a table left to an opted-in HNSW index, a
  workspace whose vector folder could not be written);
* ``PENDING``: a build loaded the rows without vectors and has not yet written the files (the
  documents stay pending, kgviz.index.graph_write, so a build that stops here is redone by the
  next build, which purges and writes them again; no LLM call is repeated);
* ``FILES_PREFIX + digest``: the files written for that id digest (vector_file.ids_digest of the
  embedded ids) hold every embedded row. A later writer (a build adding documents, an imported
  KG) merges its rows into them and names the new digest.

A table kept in files never falls back to Kùzu for a vector: files that are missing or do not
match the digest are a ``GraphStoreError`` that says to run the build again.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol

KEY_PREFIX = "vectors.home."
PENDING = "pending"
FILES_PREFIX = "files:"
TABLES = ("Document", "Chunk", "Entity", "Triple")  # the tables whose vectors may be kept in files only


class MetaHost(Protocol):
    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def execute(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...


_Q_GET = "MATCH (m:Meta) WHERE m.key = $k RETURN m.value AS value"
_Q_SET = "MERGE (m:Meta {key: $k}) SET m.value = $v"


def state(store: MetaHost, table: str) -> str | None:
    """The table's Meta value (None: the vectors are in Kùzu)."""
    if table not in TABLES:
        return None
    rows = store.query(_Q_GET, {"k": KEY_PREFIX + table})
    return str(rows[0]["value"]) if rows and rows[0]["value"] else None


def in_files(value: str | None) -> bool:
    """Whether ``state``'s value says the table keeps its vectors out of Kùzu (pending or written)."""
    return value is not None


def files_digest(value: str | None) -> str | None:
    """The id digest of the files ``state``'s value names; None while pending or in Kùzu."""
    return value[len(FILES_PREFIX):] if value is not None and value.startswith(FILES_PREFIX) else None


def mark_pending(store: MetaHost, table: str) -> None:
    store.execute(_Q_SET, {"k": KEY_PREFIX + table, "v": PENDING})


def mark_files(store: MetaHost, table: str, digest: str) -> None:
    store.execute(_Q_SET, {"k": KEY_PREFIX + table, "v": FILES_PREFIX + digest})
