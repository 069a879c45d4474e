"""Module-level tasks for the build's worker processes (kgviz.index.processes): a worker imports
a task by name, so a test's task must live in an importable module, not in the test function."""
from __future__ import annotations

import os
import time

from kgviz.errors import BuildError


def square_after(x: int, delay_s: float) -> int:
    """x * x after ``delay_s``: tasks given decreasing delays finish out of input order."""
    time.sleep(delay_s)
    return x * x


def fail_on(x: int, bad: int) -> int:
    if x == bad:
        raise BuildError(f"task {x} cannot be done here")
    return x


def exit_on(x: int, bad: int) -> int:
    if x == bad:
        os._exit(7)  # a worker that dies without a reply
    return x


def print_and_return(x: int) -> int:
    print("a stray line on stdout")  # must not break the reply stream
    return x


def failing_extract_batch(items: list, max_triples: int) -> list:
    """Stands in for kgviz.index.offline_batch.extract_offline_batch: the second batch fails."""
    from kgviz.index.offline_batch import extract_offline_batch

    if any(chunk.ord == 1 for chunk, _ in items):
        raise ValueError(f"the extractor broke on {items[0][0].id}")
    return extract_offline_batch(items, max_triples)


def slow_extract_batch(items: list, max_triples: int) -> list:
    """kgviz.index.offline_batch.extract_offline_batch, 0.3 s a batch: a test can kill the build mid-way."""
    from kgviz.index.offline_batch import extract_offline_batch

    time.sleep(0.3)
    return extract_offline_batch(items, max_triples)


def slow_vector_files(workspace: str, spill: object, table: str) -> dict:
    """kgviz.index.early_vectors.write_from_spill, the Triple table's rows gathered 64 at a time,
    0.2 s a gather: a test can stop the build while the worker's temporary files are on disk."""
    from kgviz.graph import vector_file
    from kgviz.index import early_vectors

    if table != "Triple":
        return early_vectors.write_from_spill(workspace, spill, table)  # type: ignore[arg-type]
    vector_file.WRITE_BLOCK = 64
    gather = vector_file.RowFile.__getitem__

    def slow(self, index):  # type: ignore[no-untyped-def]
        time.sleep(0.2)
        return gather(self, index)

    vector_file.RowFile.__getitem__ = slow  # type: ignore[method-assign]
    return early_vectors.write_from_spill(workspace, spill, table)  # type: ignore[arg-type]


def vector_files_on_a_full_disk(workspace: str, spill: object, table: str) -> dict:
    """kgviz.index.early_vectors.write_from_spill on a disk that fills up as the Triple table's
    unit rows are put in place (ENOSPC from the rename of its written temporary file)."""
    import errno

    from kgviz.graph import vector_file
    from kgviz.index import early_vectors

    replace = os.replace

    def full(src, dst):  # type: ignore[no-untyped-def]
        if str(dst).endswith("Triple.emb.npy"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return replace(src, dst)

    vector_file.os.replace = full  # type: ignore[attr-defined]
    return early_vectors.write_from_spill(workspace, spill, table)  # type: ignore[arg-type]
