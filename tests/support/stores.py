"""Opening workspaces in a test's temporary folder, each closed when the test ends."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from kgviz.graph.store import GraphStore


@contextmanager
def store_opener(folder: Path, embedder: Any) -> Iterator[Callable[..., GraphStore]]:
    """``make(name="ws")``: the workspace ``folder/name`` for ``embedder``'s vectors; every one made
    is closed on leaving."""
    stores: list[GraphStore] = []

    def make(name: str = "ws") -> GraphStore:
        store = GraphStore.open(folder / name, embedder_id=embedder.id, dim=embedder.dim)
        stores.append(store)
        return store

    try:
        yield make
    finally:
        for store in stores:
            store.close()
