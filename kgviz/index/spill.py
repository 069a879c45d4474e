"""A build's new vectors on disk, between the embed stage and the write and index stages.

Issue 29: the embed stage used to hand every new Document/Chunk/Entity/Triple vector to the
write stage in one float32 matrix (plus row dicts holding a view of each row, plus the Arrow
copy of the whole table for COPY), and the index stage kept them until the vector files were
written: ~700 MB at 10k passages, growing with the corpus. Here each table's vectors are appended
to a raw float32 file in the order its rows will be loaded; the write stage reads them back a
batch at a time and the index stage gathers them a block at a time
(``kgviz.graph.vector_file.RowFile``), so no stage holds more than a batch. The files are written with ``write()`` (not a memory map), so pages
the kernel caches for them are not the build's resident memory.

The ids of each table's new rows, in the same order, are kept there too (``keep_ids``/``ids``):
the index stage needs them to write the vector files, and held as Python strings through the
doc_layer and ket stages they were ~0.2 GB at 100k passages (1.4M Triple ids, ~0.75M Entity ids).

The spill folder lives in the workspace (the same volume as the graph, which a user sized for
it) and is removed when the build ends; one left by a killed build is removed by the next, but
never the folder of a build still under way in this process: a build can run inside another
(kgviz.index.pipeline), and the outer build's spill may hold the only copy of its vectors (the
tables kept in the vector files only, kgviz.graph.vector_home). Builds in two processes never
meet: the database lets one process open a workspace at a time.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import threading
from pathlib import Path

import numpy as np

from kgviz.graph.vector_file import RowFile

SPILL_PREFIX = ".build-vectors-"
_LIVE: set[Path] = set()  # the spill folders of this process's builds under way
_LIVE_LOCK = threading.Lock()


class VectorSpill:
    """Per-table raw vector files under a fresh folder of ``workspace``; a context manager that
    removes the folder (and any a killed build left) when the build ends."""

    def __init__(self, workspace: Path, dim: int) -> None:
        self.dim = dim
        workspace = Path(workspace)
        with _LIVE_LOCK:
            for stale in workspace.glob(SPILL_PREFIX + "*"):  # a killed build's, not one under way here
                if stale.resolve() not in _LIVE:
                    shutil.rmtree(stale, ignore_errors=True)
            self.directory = Path(tempfile.mkdtemp(prefix=SPILL_PREFIX, dir=workspace))
            _LIVE.add(self.directory.resolve())
        self._counts: dict[str, int] = {}

    def __enter__(self) -> VectorSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with _LIVE_LOCK:
            _LIVE.discard(self.directory.resolve())
        shutil.rmtree(self.directory, ignore_errors=True)

    def _path(self, table: str) -> Path:
        return self.directory / f"{table}.f32"

    def append(self, table: str, vectors: np.ndarray) -> None:
        """Add ``vectors`` (rows of this table, in load order) after the ones already spilled."""
        block = np.ascontiguousarray(vectors, dtype=np.float32)
        if block.ndim != 2 or block.shape[1] != self.dim:
            raise ValueError(f"spill {table}: vectors of shape {block.shape}, expected (n, {self.dim})")
        with open(self._path(table), "ab") as f:
            f.write(block.view(np.uint8).data)  # the rows' bytes as they are, no copy
        self._counts[table] = self._counts.get(table, 0) + len(block)

    def count(self, table: str) -> int:
        return self._counts.get(table, 0)

    def read(self, table: str, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` of ``table``'s spilled vectors (a copy in memory)."""
        stop = min(stop, self.count(table))
        if stop <= start:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.empty((stop - start, self.dim), dtype=np.float32)
        with open(self._path(table), "rb") as f:
            f.seek(start * 4 * self.dim)
            got = f.readinto(out.data.cast("B"))
        if got != out.nbytes:
            raise OSError(f"spill {table}: read {got} of {out.nbytes} bytes at row {start}")
        return out

    def keep_ids(self, table: str, ids: list[str]) -> None:
        """Keep ``ids`` (the ids of ``table``'s spilled rows, in load order) on disk until ``ids``."""
        if len(ids) != self.count(table):
            raise ValueError(f"spill {table}: {len(ids)} ids for {self.count(table)} spilled rows")
        with open(self.directory / f"{table}.ids.json", "w", encoding="utf-8") as f:
            json.dump(ids, f, ensure_ascii=False)

    def ids(self, table: str) -> list[str] | None:
        """The ids ``keep_ids`` kept for ``table``; None when none were kept."""
        try:
            with open(self.directory / f"{table}.ids.json", encoding="utf-8") as f:
                ids = json.load(f)
        except FileNotFoundError:
            return None
        if not isinstance(ids, list) or len(ids) != self.count(table):
            raise OSError(f"spill {table}: the kept ids do not match the {self.count(table)} spilled rows")
        return [str(i) for i in ids]

    def loaded(self, table: str) -> tuple[list[str], RowFile] | None:
        """(ids, rows) of ``table``'s new rows when ``keep_ids`` kept their ids (every one was
        loaded with its spilled vector), else None: what the doc_layer and index stages take
        instead of reading the vectors back out of Kùzu."""
        ids = self.ids(table)
        return None if ids is None else (ids, self.rows(table))

    def rows(self, table: str) -> RowFile:
        """Every spilled row of ``table``, gathered by index on demand (``RowFile``)."""
        return RowFile(self._path(table), self.count(table), self.dim)
