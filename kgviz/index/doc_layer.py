"""KG-Retriever's collaborative document layer (§3.2.1, Eq. 1): every document links to its K
most similar documents by cosine of their embeddings; the SIMILAR_DOC edge weight is the cosine
(the attention weight the attentive and multi-hop strategies multiply, §3.2.2).

Found by ``kgviz.index.cells.cosine_top_k``: every pair, a tile at a time, up to
``cells.ALL_PAIRS_MAX_ROWS`` documents (exact; the memory does not grow with the number of
documents); above, the deterministic cell search (issue 29: nothing quadratic in the number of
documents; a true neighbour can be missed, measured by benchmarks/cells_recall.py). The layer is
rebuilt whole whenever the set of documents or K changes: a new document can be a better
neighbour of an old one. Neighbours with cosine <= 0 are left out
(ours: such an edge carries no signal).

A first build hands over the Document vectors it just loaded (``loaded``: the ids and the rows
of the build's spill, kgviz.index.spill): when they are exactly the table's rows, the layer is
made from them, not from every vector read back out of Kùzu through its buffer pool (issue 29:
100k x 768 float32 at 100k passages; Kùzu stores a FLOAT vector as the float32 it was given, so
the layer is the same). Otherwise (an incremental build, a resume) the vectors are read from Kùzu.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from kgviz.graph import reads, writes
from kgviz.graph.protocol import GraphStore
from kgviz.graph.vector_file import RowFile
from kgviz.index.cells import cosine_top_k
from kgviz.index.top_k import TILE

SIGNATURE_KEY = "doc_layer_signature"
LOAD_BLOCK = 8192  # rows read from a build's spill at a time (ours: 25 MB of 768-d float32)


def top_k_neighbours(emb: np.ndarray, k: int, *, tile: int = TILE,
                     all_pairs_max_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(indices, cosines), each (n, k'), k' = min(k, n-1); rows best first, ties by index.
    ``emb`` rows need not be normalised. Above ``all_pairs_max_rows`` rows (None:
    ``cells.ALL_PAIRS_MAX_ROWS``), the cell search, a row can have fewer than k' neighbours: its last
    places hold index -1 and cosine -inf."""
    n = len(emb)
    kk = min(k, n - 1)
    if kk <= 0:
        return np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0), dtype=np.float32)
    x: np.ndarray = np.asarray(emb, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms == 0, 1.0, norms)
    # not a bare argpartition: it splits a tie at the k-th neighbour arbitrarily (exact ties are
    # common with the hashing embedder), while cosine_top_k keeps the lower index of equals
    r, c, v = cosine_top_k(x, kk, tile=tile, all_pairs_max_rows=all_pairs_max_rows)
    idx = np.full((n, kk), -1, dtype=np.int64)
    sims = np.full((n, kk), -np.inf, dtype=np.float32)
    place = np.arange(r.size) - np.searchsorted(r, r, side="left")  # rank within its row
    idx[r, place] = c
    sims[r, place] = v
    return idx, sims


def signature(doc_ids: list[str], k: int) -> str:
    h = hashlib.sha1(f"k={k}".encode())
    for d in sorted(doc_ids):
        h.update(b"\0" + d.encode("utf-8"))
    return h.hexdigest()


def loaded_rows(ids: list[str], loaded: tuple[Sequence[str], RowFile | np.ndarray] | None) -> np.ndarray | None:
    """The vectors of ``ids``, in that order, from ``loaded`` (ids and rows a build just loaded)
    when its ids are exactly ``ids`` (each row then holds its vector); else None (read Kùzu)."""
    if loaded is None or len(loaded[0]) != len(ids):
        return None
    position = {node_id: i for i, node_id in enumerate(loaded[0])}
    order = [position.get(node_id, -1) for node_id in ids]
    if len(position) != len(ids) or min(order, default=0) < 0:
        return None
    # read in load order a block at a time (a raw file: sequential reads), each row put in its place
    place = np.empty(len(ids), dtype=np.int64)
    place[np.asarray(order, dtype=np.int64)] = np.arange(len(ids))
    out = np.empty((len(ids), loaded[1].shape[1]), dtype=np.float32)
    for start in range(0, len(ids), LOAD_BLOCK):
        out[place[start:start + LOAD_BLOCK]] = loaded[1][start:start + LOAD_BLOCK]
    return out


def build_doc_layer(store: GraphStore, k: int, *, force: bool = False,
                    loaded: tuple[Sequence[str], RowFile | np.ndarray] | None = None) -> int | None:
    """(Re)build SIMILAR_DOC; returns the number of edges, or None when it was up to date.
    ``force`` rebuilds whatever the signature says (a build killed inside this step).
    ``loaded``: (ids, vectors) of the Document rows this build loaded (module docstring)."""
    ids = reads.all_document_ids(store)
    sig = signature(ids, k)
    if not force and store.get_meta(SIGNATURE_KEY) == sig:
        return None
    vectors = loaded_rows(ids, loaded)
    if vectors is None:
        embs = store.get_embeddings("Document", ids)
        ids = [i for i in ids if i in embs]
        vectors = np.stack([embs[i] for i in ids]) if ids else None
        del embs
    writes.delete_similar_doc(store)
    rows: list[dict[str, object]] = []
    if vectors is not None and k > 0:
        idx, sims = top_k_neighbours(vectors, k)
        del vectors
        for a, (nbrs, ws) in enumerate(zip(idx, sims)):
            rows.extend({"from": ids[a], "to": ids[b], "weight": float(w)} for b, w in zip(nbrs, ws) if w > 0)
    n = store.bulk_load_rels("SIMILAR_DOC", rows, from_table="Document", to_table="Document") if rows else 0
    store.set_meta(SIGNATURE_KEY, sig)  # last: a crash before this line means "rebuild next time"
    return n
