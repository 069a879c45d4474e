"""The exact vector index: a table's embedded rows as one float32 matrix in the workspace,
memory-mapped, so an exact top-k over 100,000+ rows needs no copy in RAM and no reload after a
restart (issue 29; the 50,000-row cached matrix it replaces was read out of Kùzu per process).

Files, per table, under ``<workspace>/vectors/``: ``<table>.ids.npy`` (ids, sorted, fixed-width
unicode: loads without pickle), ``<table>.emb.npy`` (float32 rows of length 1, same order),
``<table>.same.npy`` (per row: True when its unit row is bit for bit the vector Kùzu stores, as
with embedders that return unit rows, so a read of stored vectors by id can take it from here
instead of scanning Kùzu's vector column: ``kgviz.graph.search.stored_vectors``) and
``<table>.json`` (row count, dimension and the sha256 of the sorted ids). The sorted order makes
the files a function of the table's content alone, whatever order Kùzu returns rows in, so two
builds of one corpus write identical files. A file is used only while its id digest equals the
table's (an embedding is never changed in place: Kùzu cannot SET an indexed vector column and
kgviz never re-embeds a row), and is rewritten otherwise. Files are replaced whole (write aside,
then rename), so a reader never sees half of one.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

import numpy as np

VECTOR_DIR = "vectors"
WRITE_BLOCK = 8192  # rows sorted, normalised and written at a time


def ids_digest(sorted_ids: list[str]) -> str:
    h = hashlib.sha256()
    for i in sorted_ids:
        h.update(i.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _paths(workspace: Path, table: str) -> tuple[Path, Path, Path]:
    d = Path(workspace) / VECTOR_DIR
    return d / f"{table}.ids.npy", d / f"{table}.emb.npy", d / f"{table}.json"


def _same_path(workspace: Path, table: str) -> Path:
    return Path(workspace) / VECTOR_DIR / f"{table}.same.npy"


def load(workspace: Path, table: str, digest: str, dim: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(ids, memory-mapped unit rows) when the stored files describe exactly these ids; else None."""
    ids_path, emb_path, meta_path = _paths(workspace, table)
    try:
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("digest") != digest or int(meta.get("dim", -1)) != dim:
            return None
        ids = np.load(ids_path, allow_pickle=False)
        emb = np.load(emb_path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    if emb.dtype != np.float32 or emb.shape != (ids.shape[0], dim) or ids.shape[0] != int(meta.get("n", -1)):
        return None
    return ids, emb


def load_same(workspace: Path, table: str, digest: str, n: int) -> np.ndarray | None:
    """The per-row "unit row equals the stored vector" flags of the files ``load`` accepted for
    ``digest``; None when they are missing (files of an older kgviz) or do not fit."""
    _, _, meta_path = _paths(workspace, table)
    try:
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("digest") != digest or not meta.get("same"):
            return None
        same = np.load(_same_path(workspace, table), allow_pickle=False)
    except (OSError, ValueError):
        return None
    return same if same.dtype == np.bool_ and same.shape == (n,) else None


def write(workspace: Path, table: str, ids: list[str], rows: np.ndarray,
          normalise: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Store ``ids`` and their unit rows sorted by id; returns (sorted ids, memory-mapped rows).
    ``rows`` are the unit rows, or, with ``normalise``, the vectors as Kùzu holds them: each
    block of them is normalised here, and the per-row flags "unit row == stored vector" are
    stored too (``load_same``). Rows are sorted, normalised and written WRITE_BLOCK at a time, so
    no whole-table copy is made (issue 29: each copy of 143k 768-d triple vectors was 440 MB of
    peak RSS). OSError when the workspace folder cannot be written (the caller ranks in memory)."""
    order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
    sorted_ids = [ids[i] for i in order.tolist()]
    id_array = np.array(sorted_ids, dtype=str) if sorted_ids else np.zeros(0, dtype="<U1")
    n, dim = len(sorted_ids), int(rows.shape[1]) if rows.ndim == 2 else 0
    ids_path, emb_path, meta_path = _paths(workspace, table)
    ids_path.parent.mkdir(parents=True, exist_ok=True)
    suffix = f".tmp{os.getpid()}"
    same = np.zeros(n, dtype=np.bool_)
    with open(str(emb_path) + suffix, "wb") as f:  # np.save's format, written a block at a time
        np.lib.format.write_array_header_1_0(
            f, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False, "shape": (n, dim)})
        for b0 in range(0, n, WRITE_BLOCK):
            block = np.ascontiguousarray(rows[order[b0:b0 + WRITE_BLOCK]], dtype=np.float32)
            unit = block if normalise is None else np.ascontiguousarray(normalise(block), dtype=np.float32)
            same[b0:b0 + len(block)] = np.all(unit == block, axis=1)
            f.write(unit.tobytes())
    os.replace(str(emb_path) + suffix, emb_path)
    files: list[tuple[Path, np.ndarray]] = [(ids_path, id_array)]
    if normalise is not None:
        files.append((_same_path(workspace, table), same))
    for path, value in files:
        with open(str(path) + suffix, "wb") as f:
            np.save(f, value, allow_pickle=False)
        os.replace(str(path) + suffix, path)
    meta = {"n": n, "dim": dim, "digest": ids_digest(sorted_ids), "same": normalise is not None}
    Path(str(meta_path) + suffix).write_text(json.dumps(meta), "utf-8")
    os.replace(str(meta_path) + suffix, meta_path)  # last: the files above are whole before it names them
    return id_array, np.load(emb_path, mmap_mode="r", allow_pickle=False)
