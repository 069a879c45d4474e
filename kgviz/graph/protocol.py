"""``GraphStore``: what methods, the index builder and the read functions need from a store.

A structural type, so ``MethodContext.store`` can be typed without methods importing store.py
(and, through it, kuzu); ``kgviz.graph.store.GraphStore`` satisfies it (pinned by a test).
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np
import pyarrow as pa


@runtime_checkable
class GraphStore(Protocol):
    path: Path
    dim: int
    embedder_id: str
    read_only: bool

    # statements (used only by the functions in kgviz/graph/)
    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def query_arrow(self, cypher: str, params: Mapping[str, Any] | None = None) -> pa.Table: ...
    def execute(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def write_lock(self, timeout: float | None = None) -> AbstractContextManager[None]: ...

    # meta, bulk loads, vectors
    def get_meta(self, key: str, default: str | None = None) -> str | None: ...
    def set_meta(self, key: str, value: str | int | float) -> None: ...
    def get_embeddings(self, table: str, ids: Sequence[str]) -> dict[str, np.ndarray]: ...
    def bulk_load_nodes(self, table: str, rows: Any) -> int: ...
    def bulk_load_rels(self, rel: str, rows: Any, *, from_table: str, to_table: str) -> int: ...

    # search
    def vector_search(self, table: str, vector: Sequence[float] | np.ndarray, k: int, *,
                      where: Mapping[str, Any] | None = None) -> list[tuple[str, float]]: ...
    def fts_search(self, query: str, k: int, table: str = "Chunk") -> list[tuple[str, float]]: ...
