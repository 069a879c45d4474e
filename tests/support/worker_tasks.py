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
