"""The exact vector index: a table's embedded rows as one float32 matrix in the workspace,
memory-mapped, so an exact top-k over 100,000+ rows needs no copy in RAM and no reload after a
restart (issue 29; the 50,000-row cached matrix it replaces was read out of Kùzu per process).

Files, per table, under ``<workspace>/vectors/``: ``<table>.ids.npy`` (ids, sorted, fixed-width
unicode: loads without pickle), ``<table>.emb.npy`` (float32 rows of length 1, same order) and
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

import numpy as np

VECTOR_DIR = "vectors"


def ids_digest(sorted_ids: list[str]) -> str:
    h = hashlib.sha256()
    for i in sorted_ids:
        h.update(i.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _paths(workspace: Path, table: str) -> tuple[Path, Path, Path]:
    d = Path(workspace) / VECTOR_DIR
    return d / f"{table}.ids.npy", d / f"{table}.emb.npy", d / f"{table}.json"


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


def write(workspace: Path, table: str, ids: list[str], unit_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Store ``ids`` and their unit rows sorted by id; returns (sorted ids, memory-mapped rows).
    OSError when the workspace folder cannot be written (the caller ranks in memory then)."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    sorted_ids = [ids[i] for i in order]
    id_array = np.array(sorted_ids, dtype=str) if sorted_ids else np.zeros(0, dtype="<U1")
    matrix = np.ascontiguousarray(unit_rows[order], dtype=np.float32)
    ids_path, emb_path, meta_path = _paths(workspace, table)
    ids_path.parent.mkdir(parents=True, exist_ok=True)
    suffix = f".tmp{os.getpid()}"
    for path, value in ((ids_path, id_array), (emb_path, matrix)):
        with open(str(path) + suffix, "wb") as f:
            np.save(f, value, allow_pickle=False)
        os.replace(str(path) + suffix, path)
    meta = {"n": len(sorted_ids), "dim": int(matrix.shape[1]) if matrix.ndim == 2 else 0,
            "digest": ids_digest(sorted_ids)}
    Path(str(meta_path) + suffix).write_text(json.dumps(meta), "utf-8")
    os.replace(str(meta_path) + suffix, meta_path)  # last: the files above are whole before it names them
    return id_array, np.load(emb_path, mmap_mode="r", allow_pickle=False)
