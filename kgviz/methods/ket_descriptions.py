"""The skeleton's LLM-written descriptions (KET-RAG Algorithm 1 line 3), held in memory for the
skeleton channel (kgviz.methods.ket_channels), like the keyword layer in kgviz.methods.ket_cache.

A graph built with an LLM holds one Description row per described entity and relationship
(kgviz.index.ket_describe) and the Meta key ``ket.descriptions``; a graph without that key (built
offline, with ``ket_descriptions`` off, or before Alg. 1 descriptions existed) has no view, and
the skeleton channel keeps the source-sentence descriptions (ours). The view is reloaded when the
Meta value or the number of rows changes (a later build added some).
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgviz.graph.protocol import GraphStore
from kgviz.graph import reads
from kgviz.graph.arrow import vectors_to_numpy
from kgviz.index.ket_describe import META_DESCRIPTIONS
from kgviz.vectors import unit_rows

_LOCK = threading.Lock()
_VIEWS: dict[str, tuple[tuple[str, int], "DescriptionView"]] = {}


@dataclass
class DescriptionView:
    info: dict[str, Any]  # what wrote them: prompt, origin, mode
    targets: list[str]  # Entity or Triple ids, one row each
    kinds: list[str]  # 'entity' | 'relationship'
    texts: list[str]
    matrix: np.ndarray  # unit rows
    row: dict[str, int]

    def text(self, target: str) -> str | None:
        i = self.row.get(target)
        return None if i is None else self.texts[i]

    def cosines(self, targets: list[str], qv: np.ndarray) -> dict[str, float]:
        """cos(description, query) of the targets that have a description."""
        rows = [(t, self.row[t]) for t in targets if t in self.row]
        if not rows:
            return {}
        sims = self.matrix[[i for _, i in rows]] @ qv
        return {t: float(x) for (t, _), x in zip(rows, sims.tolist())}

    def nearest_entities(self, qv: np.ndarray) -> list[tuple[str, float]]:
        """Every described entity by cosine of its description to the query, best first (ties by id)."""
        idx = [i for i, k in enumerate(self.kinds) if k == "entity"]
        if not idx:
            return []
        sims = (self.matrix[idx] @ qv).tolist()
        return sorted(((self.targets[i], float(x)) for i, x in zip(idx, sims)), key=lambda tx: (-tx[1], tx[0]))


def _key(store: GraphStore) -> str:
    return f"{store.path}|{store.embedder_id}|{store.dim}"


def _stamp(store: GraphStore) -> tuple[str, int] | None:
    """(Meta value, number of Description rows), None when the graph has no descriptions."""
    meta = store.get_meta(META_DESCRIPTIONS)
    return (str(meta), reads.count_nodes(store, "Description")) if meta else None


def description_view(store: GraphStore) -> DescriptionView | None:
    """The graph's skeleton descriptions, or None when it has none (see the module docstring). The
    stamp is read once per database state (``GraphStore.derived``), not with two statements per
    KET run."""
    stamp: tuple[str, int] | None = store.derived("ket.descriptions_stamp", _stamp)
    if stamp is None:
        return None
    meta = stamp[0]
    with _LOCK:
        held = _VIEWS.get(_key(store))
        if held is not None and held[0] == stamp:
            return held[1]
    t = reads.skeleton_descriptions(store)
    targets = [str(x) for x in t.column(0).to_pylist()]
    matrix = unit_rows(vectors_to_numpy(t.column(3), int(store.dim))) if targets else np.zeros((0, int(store.dim)))
    view = DescriptionView(json.loads(meta), targets, [str(k) for k in t.column(1).to_pylist()],
                           [str(x or "") for x in t.column(2).to_pylist()], np.asarray(matrix, dtype=np.float32),
                           {x: i for i, x in enumerate(targets)})
    with _LOCK:
        _VIEWS[_key(store)] = (stamp, view)
    return view


def forget(store: GraphStore) -> None:
    with _LOCK:
        _VIEWS.pop(_key(store), None)
