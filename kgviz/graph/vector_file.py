"""The exact vector index: a table's embedded rows as one float32 matrix in the workspace,
memory-mapped, so an exact top-k over 100,000+ rows needs no copy in RAM and no reload after a
restart (issue 29; the 50,000-row cached matrix it replaces was read out of Kùzu per process).

Files, per table, under ``<workspace>/vectors/``: ``<table>.ids.npy`` (ids, sorted, fixed-width
unicode: loads without pickle), ``<table>.emb.npy`` (float32 rows of length 1, same order),
``<table>.same.npy`` and ``<table>.stored.npy`` (the vectors as Kùzu stores them, so a read of
stored vectors by id takes them from here instead of scanning Kùzu's vector column,
``kgviz.graph.search.stored_vectors``: per row -1 when its unit row is that vector bit for bit —
about 80% of hashing rows, whose vectors are unit rows already — else the row of the stored
file that holds it) and
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
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np

VECTOR_DIR = "vectors"
WRITE_BLOCK = 8192  # rows sorted, normalised and written at a time


class RowFile:
    """``n`` float32 rows of length ``dim`` in a raw file, read by row indices (a slice, an index
    array). Each row is read with its own ``pread``: gathering rows through a memory map made the
    kernel map the pages around every touched row too, and mapped pages count as the process's
    memory (measured: a block-wise gather of 143k random 768-d rows raised peak RSS by 465 MB
    through a map, 48 MB by pread)."""

    def __init__(self, path: Path, n: int, dim: int) -> None:
        self.path, self.n, self.dim = path, n, dim

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.dim)

    @property
    def ndim(self) -> int:
        return 2

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: Any) -> np.ndarray:
        rows = np.arange(self.n)[index].reshape(-1)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        if not len(rows):
            return out
        row_bytes = 4 * self.dim
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for j, i in enumerate(rows.tolist()):
                data = os.pread(fd, row_bytes, i * row_bytes)
                if len(data) != row_bytes:
                    raise OSError(f"{self.path}: row {i} is cut short ({len(data)} of {row_bytes} bytes)")
                out[j] = np.frombuffer(data, dtype=np.float32)
        finally:
            os.close(fd)
        return out


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


def _stored_path(workspace: Path, table: str) -> Path:
    return Path(workspace) / VECTOR_DIR / f"{table}.stored.npy"


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


def load_same(workspace: Path, table: str, digest: str, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(per row: -1 or its row in the stored file, the stored file memory-mapped) of the files
    ``load`` accepted for ``digest``; None when they are missing (an older kgviz) or do not fit."""
    _, _, meta_path = _paths(workspace, table)
    try:
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("digest") != digest or meta.get("same") != 2:
            return None
        same = np.load(_same_path(workspace, table), allow_pickle=False)
        stored = np.load(_stored_path(workspace, table), mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    if same.dtype != np.int64 or same.shape != (n,) or stored.dtype != np.float32 or stored.ndim != 2:
        return None
    return same, stored


def write(workspace: Path, table: str, ids: list[str], rows: np.ndarray | RowFile,
          normalise: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Store ``ids`` and their unit rows sorted by id; returns (sorted ids, memory-mapped rows).
    ``rows`` are the unit rows, or, with ``normalise``, the vectors as Kùzu holds them: each
    block of them is normalised here, and the per-row flags "unit row == stored vector" are
    stored too, with the rows where they differ (``load_same``). Rows are sorted, normalised and written WRITE_BLOCK at a time, so
    no whole-table copy is made (issue 29: each copy of 143k 768-d triple vectors was 440 MB of
    peak RSS); ``rows`` may be a ``RowFile`` (a build's spilled vectors), gathered a block at a
    time. OSError when the workspace folder cannot be written (the caller ranks in memory)."""
    order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
    sorted_ids = [ids[i] for i in order.tolist()]
    id_array = np.array(sorted_ids, dtype=str) if sorted_ids else np.zeros(0, dtype="<U1")
    n, dim = len(sorted_ids), int(rows.shape[1]) if rows.ndim == 2 else 0
    ids_path, emb_path, meta_path = _paths(workspace, table)
    ids_path.parent.mkdir(parents=True, exist_ok=True)
    suffix = f".tmp{os.getpid()}"
    same = np.full(n, -1, dtype=np.int64)
    n_diff = 0
    # the rows whose unit row differs go to a raw file as they are found (at 100k passages they
    # were ~860 MB held in memory, then copied once more by a concatenate), then behind their
    # .npy header below: the bytes np.save would write for them
    differing_raw = Path(str(_stored_path(workspace, table)) + suffix + ".raw")
    with open(str(emb_path) + suffix, "wb") as f, open(differing_raw, "wb") as diff:
        np.lib.format.write_array_header_1_0(
            f, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False, "shape": (n, dim)})
        for b0 in range(0, n, WRITE_BLOCK):
            block = np.ascontiguousarray(rows[order[b0:b0 + WRITE_BLOCK]], dtype=np.float32)
            unit = block if normalise is None else np.ascontiguousarray(normalise(block), dtype=np.float32)
            if normalise is not None:
                other = np.flatnonzero(~np.all(unit == block, axis=1))
                same[b0 + other] = n_diff + np.arange(other.size)
                n_diff += other.size
                diff.write(np.ascontiguousarray(block[other]).tobytes())
            f.write(unit.tobytes())
    os.replace(str(emb_path) + suffix, emb_path)
    for path, value in [(ids_path, id_array)] + ([(_same_path(workspace, table), same)] if normalise is not None else []):
        with open(str(path) + suffix, "wb") as f:
            np.save(f, value, allow_pickle=False)
        os.replace(str(path) + suffix, path)
    if normalise is not None:
        stored_path = _stored_path(workspace, table)
        with open(str(stored_path) + suffix, "wb") as f, open(differing_raw, "rb") as diff:
            np.lib.format.write_array_header_1_0(
                f, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False,
                    "shape": (n_diff, dim)})
            shutil.copyfileobj(diff, f, 1 << 22)
        os.replace(str(stored_path) + suffix, stored_path)
    differing_raw.unlink()
    meta = {"n": n, "dim": dim, "digest": ids_digest(sorted_ids), "same": 2 if normalise is not None else 0}
    Path(str(meta_path) + suffix).write_text(json.dumps(meta), "utf-8")
    os.replace(str(meta_path) + suffix, meta_path)  # last: the files above are whole before it names them
    return id_array, np.load(emb_path, mmap_mode="r", allow_pickle=False)
