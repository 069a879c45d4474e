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

A table whose unit rows are mostly zeros (hashing vectors) also gets their by-column copy,
``<table>.csc.{data,indices,indptr}.npy`` with ``<table>.csc.json`` (the id digest it was made
for, or that the rows are not mostly zeros): what exact search multiplies with, memory-mapped by
each process instead of made by its first question. It is removed before the rows are rewritten
and used only for the digest it names; a damaged one is made again (logged).
"""
from __future__ import annotations

import hashlib
import json
import errno
import logging
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Protocol

import numpy as np

from kgviz.errors import DiskFullError

VECTOR_DIR = "vectors"
WRITE_BLOCK = 8192  # rows sorted, normalised and written at a time
CSC_PARTS = ("data", "indices", "indptr")
CSC_VERSION = 1
log = logging.getLogger(__name__)


class Rows(Protocol):
    """What ``write`` reads rows from: a shape, and rows gathered by an index array."""

    shape: tuple[int, int]
    ndim: int

    def __getitem__(self, index: Any) -> np.ndarray: ...


class RowFile:
    """``n`` float32 rows of length ``dim`` in a raw file, read by row indices (a slice, an index
    array). Each row is read with its own ``preadv`` straight into its place in the result:
    gathering rows through a memory map made the kernel map the pages around every touched row
    too, and mapped pages count as the process's memory (measured: a block-wise gather of 143k
    random 768-d rows raised peak RSS by 465 MB through a map, 48 MB by pread; on kernel 6.18 a
    map opened for 1,024 rows alone still raised it by ~440 MB, the whole file: the kernel maps
    its large page-cache folios whole). Reading into the result, not into a new bytes object
    copied after, halves the Python work per row (issue 29: 2.3M rows at 100k passages)."""

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
        if isinstance(index, slice) and index.step in (None, 1):  # a range of rows: one read
            return self._range(*index.indices(self.n)[:2])
        rows = np.arange(self.n)[index].reshape(-1)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        if not len(rows):
            return out
        row_bytes = 4 * self.dim
        place = out.data.cast("B")
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for j, i in enumerate(rows.tolist()):
                got = os.preadv(fd, [place[j * row_bytes:(j + 1) * row_bytes]], i * row_bytes)
                if got != row_bytes:
                    raise OSError(f"{self.path}: row {i} is cut short ({got} of {row_bytes} bytes)")
        finally:
            os.close(fd)
        return out

    def _range(self, start: int, stop: int) -> np.ndarray:
        out = np.empty((max(0, stop - start), self.dim), dtype=np.float32)
        if not len(out):
            return out
        with open(self.path, "rb") as f:
            f.seek(start * 4 * self.dim)
            got = f.readinto(out.data.cast("B"))
        if got != out.nbytes:
            raise OSError(f"{self.path}: rows {start}:{stop} are cut short ({got} of {out.nbytes} bytes)")
        return out


@contextmanager
def temporary_files(folder: Path) -> Iterator[str]:
    """The suffix of this writer's temporary files in ``folder`` (process and thread: two writers
    never share one). A failed write removes them (at 100,000 passages a Triple vector file half
    written is ~5 GB) and a full disk is a DiskFullError, so no caller takes it for a folder it
    may not write (those rank in memory: a whole table read back out of Kùzu, which at that size
    overflows its buffer pool)."""
    suffix = f".tmp{os.getpid()}-{threading.get_ident()}"
    try:
        yield suffix
    except BaseException as err:
        for left in folder.glob(f"*{suffix}*"):
            left.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFullError(f"the disk is full: {folder} could not be written ({err.strerror})",
                                hint="free some disk space and run the build again: finished stages are kept") from err
        raise


def writable(workspace: Path | str) -> bool:
    """Whether files can be made in the workspace's vector folder (made if missing)."""
    folder = Path(workspace) / VECTOR_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            return True
    except OSError:
        return False


DIGEST_IDS = 65_536  # ids joined into one update of the digest (ours)


def ids_digest(sorted_ids: list[str]) -> str:
    """sha256 of every id's UTF-8 bytes, each followed by a NUL byte. UTF-8 of a joined string is
    the join of the ids' UTF-8, so DIGEST_IDS ids go into one update (issue 29: 1.4M ids, the
    triples of 100,000 passages, took 0.46 s with two updates per id and 0.20 s joined; one run)."""
    h = hashlib.sha256()
    for start in range(0, len(sorted_ids), DIGEST_IDS):
        h.update(("\0".join(sorted_ids[start:start + DIGEST_IDS]) + "\0").encode("utf-8"))
    return h.hexdigest()


def _paths(workspace: Path, table: str) -> tuple[Path, Path, Path]:
    d = Path(workspace) / VECTOR_DIR
    return d / f"{table}.ids.npy", d / f"{table}.emb.npy", d / f"{table}.json"


def _same_path(workspace: Path, table: str) -> Path:
    return Path(workspace) / VECTOR_DIR / f"{table}.same.npy"


def _stored_path(workspace: Path, table: str) -> Path:
    return Path(workspace) / VECTOR_DIR / f"{table}.stored.npy"


def _csc_paths(workspace: Path, table: str) -> dict[str, Path]:
    d = Path(workspace) / VECTOR_DIR
    return {part: d / f"{table}.csc.{part}.npy" for part in CSC_PARTS} | {"meta": d / f"{table}.csc.json"}


def load(workspace: Path, table: str, digest: str, dim: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(ids, memory-mapped unit rows) when the stored files describe exactly these ids; else None."""
    ids_path, emb_path, meta_path = _paths(workspace, table)
    try:
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("digest") != digest or int(meta.get("dim", -1)) != dim:
            return None
        # mapped too: a search reads a few ids by binary search (Entity ids at 10k passages are
        # 78 MB as fixed-width unicode, 0.45 s to read whole per process)
        ids = np.load(ids_path, mmap_mode="r", allow_pickle=False)
        emb = np.load(emb_path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    if emb.dtype != np.float32 or emb.shape != (ids.shape[0], dim) or ids.shape[0] != int(meta.get("n", -1)):
        return None
    return ids, emb


def stored_digest(workspace: Path, table: str) -> str | None:
    """The id digest the stored files of ``table`` were written for; None when there are none."""
    try:
        digest = json.loads(_paths(workspace, table)[2].read_text("utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        return None
    return digest if isinstance(digest, str) else None


def remove_temporaries(workspace: Path, pid: int) -> int:
    """Remove the temporary files a writer process ``pid`` left in the vector folder (killed while
    it wrote: ``temporary_files`` had no chance to); returns how many."""
    folder = Path(workspace) / VECTOR_DIR
    left = list(folder.glob(f"*.tmp{pid}-*")) if folder.is_dir() else []
    for path in left:
        path.unlink(missing_ok=True)
    return len(left)


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


def write(workspace: Path, table: str, ids: list[str], rows: np.ndarray | RowFile | Rows,
          normalise: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Store ``ids`` and their unit rows sorted by id; returns (sorted ids, memory-mapped rows).
    ``rows`` are the unit rows, or, with ``normalise``, the vectors as Kùzu holds them: each
    block of them is normalised here, and the per-row flags "unit row == stored vector" are
    stored too, with the rows where they differ (``load_same``). Rows are sorted, normalised and written WRITE_BLOCK at a time, so
    no whole-table copy is made (issue 29: each copy of 143k 768-d triple vectors was 440 MB of
    peak RSS); ``rows`` may be a ``RowFile`` (a build's spilled vectors), gathered a block at a
    time. OSError when the workspace folder cannot be written (the caller ranks in memory)."""
    remove_csc(workspace, table)  # made from the rows about to be replaced: never left beside new ones
    order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
    sorted_ids = [ids[i] for i in order.tolist()]
    n, dim = len(sorted_ids), int(rows.shape[1]) if rows.ndim == 2 else 0
    ids_path, emb_path, meta_path = _paths(workspace, table)
    ids_path.parent.mkdir(parents=True, exist_ok=True)
    with temporary_files(ids_path.parent) as suffix:
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
                    diff.write(np.ascontiguousarray(block[other]).data)
                f.write(unit.data)  # its buffer: no bytes copy of each block
        os.replace(str(emb_path) + suffix, emb_path)
        with open(str(ids_path) + suffix, "wb") as f:
            _save_ids(f, sorted_ids)
        os.replace(str(ids_path) + suffix, ids_path)
        for path, value in [(_same_path(workspace, table), same)] if normalise is not None else []:
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
        return np.load(ids_path, mmap_mode="r", allow_pickle=False), np.load(emb_path, mmap_mode="r", allow_pickle=False)


# --- the previous files, kept while a table's only copy of its vectors is rewritten ------------------
# A table whose vectors are kept in these files only (kgviz.graph.vector_home) has its files
# rewritten when a later build or an import adds rows; ``write`` replaces them one by one, so a
# process that stops part way would leave the only copy unreadable. The files being replaced are
# kept under PREVIOUS names (hard links: no copy) until Meta names the new ones.
PREVIOUS = ".prev"


def _replaced_files(workspace: Path, table: str) -> list[Path]:
    ids_path, emb_path, meta_path = _paths(workspace, table)
    return [ids_path, emb_path, _same_path(workspace, table), _stored_path(workspace, table), meta_path]


def _previous(path: Path) -> Path:
    return path.with_name(path.name + PREVIOUS)


@contextmanager
def previous_kept(workspace: Path, table: str, keep: bool) -> Iterator[None]:
    """With ``keep``, the table's current files stay under PREVIOUS names while the body rewrites
    them (``drop_previous`` removes them once Meta names the new files; ``restore_previous``
    puts them back when it never did)."""
    if keep:
        drop_previous(workspace, table)
        for path in _replaced_files(workspace, table):
            if path.exists():
                try:
                    os.link(path, _previous(path))
                except OSError:  # a file system without hard links
                    shutil.copyfile(path, _previous(path))
    yield


def drop_previous(workspace: Path, table: str) -> None:
    for path in _replaced_files(workspace, table):
        _previous(path).unlink(missing_ok=True)


def restore_previous(workspace: Path, table: str, digest: str | None) -> bool:
    """Put back the files ``previous_kept`` kept when they, not the current ones, are those of
    ``digest`` (the one Meta names: a rewrite stopped before Meta named its files); drop them when
    the current files are. Returns whether files were put back."""
    meta_prev = _previous(_paths(workspace, table)[2])
    if digest is None or not meta_prev.exists():
        return False
    try:
        kept = json.loads(meta_prev.read_text("utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        kept = None
    if kept != digest or stored_digest(workspace, table) == digest:
        drop_previous(workspace, table)
        return False
    remove_csc(workspace, table)  # made from the rows being put aside, if any
    for path in _replaced_files(workspace, table):  # the meta file last: a restore stopped part way is done again
        if _previous(path).exists():
            os.replace(_previous(path), path)
    return True


IDS_BLOCK = 65_536  # ids made fixed-width and written at a time


def _save_ids(f: BinaryIO, sorted_ids: list[str]) -> None:
    """What ``np.save(f, np.array(sorted_ids, dtype=str))`` writes, byte for byte, without the
    whole fixed-width array: IDS_BLOCK ids at a time (issue 29: each id takes 4 bytes per
    character of the longest one; the Entity ids of 100,000 passages, some of them long names,
    were ~0.8 GB so)."""
    dtype = np.dtype(f"<U{max(1, max(map(len, sorted_ids), default=1))}")  # numpy's width for them
    np.lib.format.write_array_header_1_0(
        f, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (len(sorted_ids),)})
    for start in range(0, len(sorted_ids), IDS_BLOCK):
        f.write(np.array(sorted_ids[start:start + IDS_BLOCK], dtype=dtype).data)


# --- the by-column (CSC) copy of a mostly-zero table --------------------------------------------------
# Exact search multiplies a hashing table's unit rows through a CSC copy (kgviz.graph.search,
# SPARSE_SEARCH_BELOW); made from the rows, it cost the first question of a process seconds
# (issue 29: 3.7 s for the Entity and Triple copies at 10,000 passages), so it is stored beside the
# rows and memory-mapped: a question then reads only its own columns' pages.
READ_ROWS = 8192  # rows read from the unit-row file at a time while the copy is made
CSC_BUFFER_ENTRIES = 1 << 24  # entries (8 bytes each) held while a range of columns is gathered
Reader = Callable[[int, int], np.ndarray]


def row_reader(matrix: np.ndarray) -> Reader:
    """``read(start, stop)``: rows start..stop of ``matrix``. Rows of a memory-mapped file are read
    with a plain file read into a new array, so they are not left mapped (mapped pages count as
    the process's memory, see RowFile)."""
    if isinstance(matrix, np.memmap) and matrix.filename is not None and matrix.flags.c_contiguous:
        path, offset, dim, dtype = matrix.filename, matrix.offset, matrix.shape[1], matrix.dtype
        row_bytes = dim * dtype.itemsize

        def read(start: int, stop: int) -> np.ndarray:
            return np.fromfile(path, dtype=dtype, count=(stop - start) * dim,
                               offset=offset + start * row_bytes).reshape(stop - start, dim)
        return read
    return lambda start, stop: np.asarray(matrix[start:stop])


def _blocks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


class Pieces:
    """Each block of rows' non-zero entries ordered by column (each column's in row order),
    appended to two scratch files (``<scratch>.values``, ``.rows``) as ``column_counts`` reads
    the rows, so ``column_ranges`` gathers any range of columns from each block's run of them
    without reading the rows again (issue 29: the index stage read the 1.47M triple rows, 4.5 GB,
    once to count and once per range of columns, six times at 100,000 passages). Recording stops
    (and its files go) as soon as the rows read so far are not mostly zeros, before a block's
    entries are written, so model embeddings write nothing; ``remove`` deletes the files."""

    def __init__(self, scratch: Path, below: float) -> None:
        self.values_path, self.rows_path = Path(f"{scratch}.values"), Path(f"{scratch}.rows")
        self.below = below
        self.on = True
        self.rows = 0  # rows recorded, from row 0
        self.starts: list[np.ndarray] = []  # per block: where each column's entries begin (dim + 1)
        self._written = 0
        self._entries = 0  # non-zero entries of the rows recorded

    def add(self, block: np.ndarray, start: int) -> np.ndarray:
        """Record rows start.. (the next ones); returns their non-zero entries per column."""
        (at_rows, _), vals, per = _by_column(block, start)
        if not self.on or start != self.rows:
            self.drop()
            return per
        self._entries += int(per.sum())
        if self._entries >= self.below * (start + len(block)) * block.shape[1]:
            self.drop()  # not mostly zeros so far: column_ranges reads the rows itself
            return per
        with open(self.values_path, "ab") as fv, open(self.rows_path, "ab") as fr:
            fv.write(np.ascontiguousarray(vals, dtype=np.float32).data)
            fr.write(np.ascontiguousarray(at_rows, dtype=np.int64).data)
        self.starts.append(self._written + np.concatenate([[0], np.cumsum(per)]))
        self._written += int(per.sum())
        self.rows = start + len(block)
        return per

    def drop(self) -> None:
        self.on = False
        self.starts = []
        self.remove()

    def remove(self) -> None:
        self.values_path.unlink(missing_ok=True)
        self.rows_path.unlink(missing_ok=True)

    def gather(self, c0: int, c1: int, indptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(values, row numbers) of columns c0..c1-1, each column's in row order."""
        values = np.empty(int(indptr[c1] - indptr[c0]), dtype=np.float32)
        rows = np.empty(values.size, dtype=np.int64)
        fill = indptr[c0:c1] - indptr[c0]  # next free slot of each column
        for first in self.starts:
            a, b = int(first[c0]), int(first[c1])
            per = np.diff(first[c0:c1 + 1])
            if b == a:
                continue
            cols = np.repeat(np.arange(c1 - c0), per)
            at_slot = fill[cols] + np.arange(b - a) - (first[c0:c1] - a)[cols]
            values[at_slot] = np.fromfile(self.values_path, dtype=np.float32, count=b - a, offset=4 * a)
            rows[at_slot] = np.fromfile(self.rows_path, dtype=np.int64, count=b - a, offset=8 * a)
            fill += per
        return values, rows


def column_counts(read: Reader, n: int, dim: int, check_rows: int, below: float,
                  pieces: Pieces | None = None) -> np.ndarray | None:
    """Non-zero entries per column, or None as soon as the rows read so far are not mostly zeros:
    at least ``below`` of their entries non-zero, checked after every ``check_rows`` rows (model
    embeddings stop after the first check) and at the end; None for no rows. ``pieces``: the
    blocks read are recorded there too (``Pieces``)."""
    counts = np.zeros(dim, dtype=np.int64)
    for c_start, c_stop in _blocks(n, check_rows):
        for start, stop in _blocks(c_stop - c_start, READ_ROWS):
            block = read(c_start + start, c_start + stop)
            if pieces is not None and pieces.on:
                counts += pieces.add(block, c_start + start)
            else:
                counts += np.count_nonzero(block, axis=0)
        if int(counts.sum()) >= below * c_stop * dim:
            return None
    return counts if n else None


def column_ranges(read: Reader, n: int, dim: int, counts: np.ndarray,
                  max_entries: float = float("inf"), pieces: Pieces | None = None
                  ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(values, row numbers) of consecutive ranges of columns, each column's entries in row order
    (the CSC data and indices, a piece at a time), each range at most ``max_entries`` entries
    (or one column), the output written as it comes. From ``pieces`` when they hold all ``n``
    rows (no row read again); else the rows are read once per range."""
    indptr = np.concatenate([[0], np.cumsum(counts)])
    ranges = []
    c0 = 0
    while c0 < dim:
        c1 = max(c0 + 1, int(np.searchsorted(indptr, indptr[c0] + max_entries, side="right")) - 1)
        ranges.append((c0, min(c1, dim)))
        c0 = ranges[-1][1]
    for c0, c1 in ranges:
        if pieces is not None and pieces.on and pieces.rows == n:
            yield pieces.gather(c0, c1, indptr)
            continue
        values = np.empty(int(indptr[c1] - indptr[c0]), dtype=np.float32)
        rows = np.empty(values.size, dtype=np.int64)
        fill = indptr[c0:c1] - indptr[c0]  # next free slot of each column
        for start, stop in _blocks(n, READ_ROWS):
            (at_rows, cols), vals, per = _by_column(read(start, stop)[:, c0:c1], start)
            at_slot = fill[cols] + np.arange(cols.size) - (np.cumsum(per) - per)[cols]
            values[at_slot] = vals
            rows[at_slot] = at_rows
            fill += per
        yield values, rows


def _by_column(block: np.ndarray, start: int) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray]:
    """((row numbers, columns), values, entries per column) of a block's non-zero entries
    (rows start..), ordered by column, each column's in row order."""
    # the block's entries by row, then re-ordered by column (stable: each column's rows stay in
    # order); at a few non-zeros a row this beat transposing the whole block first
    at_rows, cols = np.nonzero(block)
    by_column = np.argsort(cols, kind="stable")
    at_rows, cols = at_rows[by_column], cols[by_column]
    return (at_rows + start, cols), block[at_rows, cols], np.bincount(cols, minlength=block.shape[1])


def index_dtype(nnz: int, n: int, dim: int) -> type:
    """scipy's choice for these sizes: int32 while every index fits (a memory-mapped int32 array
    is taken as it is, an int64 one is scanned to see whether it fits)."""
    return np.int32 if max(nnz, n, dim) <= np.iinfo(np.int32).max else np.int64


def _csc_meta(workspace: Path, table: str) -> dict[str, Any] | None:
    try:
        return dict(json.loads(_csc_paths(workspace, table)["meta"].read_text("utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}


def load_csc(workspace: Path, table: str, digest: str, n: int, dim: int
             ) -> tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray] | None] | None:
    """("sparse", memory-mapped (data, indices, indptr)) or ("dense", None) as stored for the
    unit rows with id digest ``digest``; None when nothing usable is stored: no copy (a workspace
    from an older kgviz, or a table whose rows changed) or a damaged one (logged: the caller makes
    it again)."""
    meta = _csc_meta(workspace, table)
    if meta is None:
        return None
    if meta.get("version") != CSC_VERSION or meta.get("digest") != digest or meta.get("n") != n \
            or meta.get("dim") != dim:
        return None
    if not meta.get("sparse"):
        return "dense", None
    paths = _csc_paths(workspace, table)
    try:
        nnz = int(meta["nnz"])
        parts = {p: np.load(paths[p], mmap_mode="r", allow_pickle=False) for p in CSC_PARTS}
        index = np.dtype(index_dtype(nnz, n, dim))
        data, indices, indptr = parts["data"], parts["indices"], parts["indptr"]
        fits = (data.dtype == np.float32 and data.shape == (nnz,) and indices.dtype == index
                and indices.shape == (nnz,) and indptr.dtype == index and indptr.shape == (dim + 1,)
                and indptr[0] == 0 and indptr[-1] == nnz and bool(np.all(np.diff(indptr) >= 0)))
    except (OSError, ValueError, KeyError, TypeError):
        fits = False
    if not fits:
        log.warning("%s: the stored by-column copy of %s is damaged; it is made again", workspace, table)
        return None
    return "sparse", (data, indices, indptr)


def write_csc(workspace: Path, table: str, digest: str, read: Reader, n: int, dim: int, check_rows: int,
              below: float, buffer_entries: int | None = None) -> None:
    """Store the CSC copy of the unit rows ``read`` gives (the ones with id digest ``digest``), or
    that they are not mostly zeros (column_counts). Written aside and renamed, the meta last;
    ``buffer_entries`` (default CSC_BUFFER_ENTRIES) bounds a range of columns gathered at once
    (the files are the same whatever it is).
    OSError when the folder cannot be written."""
    paths = _csc_paths(workspace, table)
    with temporary_files(paths["meta"].parent) as suffix:
        pieces = Pieces(Path(str(paths["data"]) + suffix + ".pieces"), below)
        try:
            counts = column_counts(read, n, dim, check_rows, below, pieces)
            meta: dict[str, Any] = {"version": CSC_VERSION, "digest": digest, "n": n, "dim": dim, "sparse": counts is not None}
            if counts is not None:
                nnz = int(counts.sum())
                index = index_dtype(nnz, n, dim)
                with open(str(paths["data"]) + suffix, "wb") as fd, open(str(paths["indices"]) + suffix, "wb") as fi:
                    for f, dtype in ((fd, np.float32), (fi, index)):
                        np.lib.format.write_array_header_1_0(
                            f, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": (nnz,)})
                    for values, rows in column_ranges(read, n, dim, counts, buffer_entries or CSC_BUFFER_ENTRIES, pieces):
                        fd.write(values.data)
                        fi.write(rows.astype(index).data)
                with open(str(paths["indptr"]) + suffix, "wb") as f:
                    np.save(f, np.concatenate([[0], np.cumsum(counts)]).astype(index), allow_pickle=False)
                for part in CSC_PARTS:
                    os.replace(str(paths[part]) + suffix, paths[part])
                meta["nnz"] = nnz
        finally:
            pieces.remove()
        Path(str(paths["meta"]) + suffix).write_text(json.dumps(meta), "utf-8")
        os.replace(str(paths["meta"]) + suffix, paths["meta"])


def remove_csc(workspace: Path, table: str) -> None:
    """Remove ``table``'s CSC copy (its meta first, so no reader takes the parts alone)."""
    paths = _csc_paths(workspace, table)
    for key in ("meta", *CSC_PARTS):
        paths[key].unlink(missing_ok=True)


# --- a named set of arrays derived from the graph, stored under a key ---------------------------------
def write_arrays(folder: Path, key: dict[str, Any],
                 arrays: Mapping[str, np.ndarray] | Iterable[tuple[str, np.ndarray]]) -> None:
    """Store ``arrays`` (.npy each; a mapping, or (name, array) pairs, each stored before the
    next is asked for) in ``folder`` with ``key``, what they were derived from, in ``key.json``
    (written last; the folder's previous files are removed first, so no array of another key is
    ever left beside it). OSError when the folder cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    meta_path = folder / "key.json"
    meta_path.unlink(missing_ok=True)
    for old in folder.glob("*.npy"):
        old.unlink()
    with temporary_files(folder) as suffix:
        shapes = {}
        for name, value in (arrays.items() if isinstance(arrays, Mapping) else arrays):
            path = folder / f"{name}.npy"
            with open(str(path) + suffix, "wb") as f:
                np.save(f, value, allow_pickle=False)
            os.replace(str(path) + suffix, path)
            shapes[name] = [list(value.shape), value.dtype.str]
            del value  # stored: let it go before the next is made
        Path(str(meta_path) + suffix).write_text(json.dumps({"key": key, "arrays": shapes}), "utf-8")
        os.replace(str(meta_path) + suffix, meta_path)


def load_arrays(folder: Path, key: dict[str, Any], mapped: tuple[str, ...] = ()) -> dict[str, np.ndarray] | None:
    """The arrays ``write_arrays`` stored in ``folder`` for ``key`` (those named in ``mapped``
    memory-mapped, the rest read into memory), each of the shape and type recorded with it; None
    when none are stored for that key, or they are damaged (logged: the caller derives them again)."""
    try:
        meta = json.loads((folder / "key.json").read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        meta = None
    if isinstance(meta, dict) and meta.get("key") != key:
        return None  # derived from another state of the graph: stale
    out: dict[str, np.ndarray] = {}
    try:
        for name, (shape, dtype) in meta["arrays"].items():
            value = np.load(folder / f"{name}.npy", mmap_mode="r" if name in mapped else None, allow_pickle=False)
            if list(value.shape) != shape or value.dtype.str != dtype:
                raise ValueError(f"{name}: {value.shape} {value.dtype.str}, recorded {shape} {dtype}")
            out[name] = value
    except (OSError, ValueError, TypeError, KeyError) as err:
        log.warning("%s: stored arrays are damaged (%s); they are derived again", folder, err)
        return None
    return out
