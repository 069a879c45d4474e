"""Hand memory the build has released back to the operating system (issue 29).

Python frees a released object's memory into the C allocator, and glibc's malloc keeps freed
blocks in its heaps for reuse: the resolved rows a build drops after its write stage (hundreds of
MB at 10k passages, gigabytes at 100k) stayed in the process's resident memory, where only later
Python objects could reuse them — not Kùzu's COPY buffers or Arrow tables, which the peak is made
of. ``malloc_trim(0)`` returns the free pages of every heap. It changes no data, only what the
process holds; where the C library has no malloc_trim (not glibc) it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def give_back(*, arrow: bool = False) -> bool:
    """Return the C heap's free pages to the system; False where that is not possible. With
    ``arrow``, Arrow's memory pool's unused pages too (Arrow allocates query results from its own
    pool, mimalloc or jemalloc, which malloc_trim does not reach)."""
    if arrow:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
