"""Array checks shared by tests."""
from __future__ import annotations

import mmap

import numpy as np


def mapped(array: np.ndarray) -> bool:
    """Whether ``array`` is a view of a memory-mapped file (not a copy in memory)."""
    base: object = array
    while base is not None:
        if isinstance(base, (np.memmap, mmap.mmap)):
            return True
        base = getattr(base, "base", None)
    return False
