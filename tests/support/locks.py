"""A lock held by another thread for the length of a ``with`` block (what another app session's
build or write looks like to the code under test)."""
from __future__ import annotations

import threading
from contextlib import AbstractContextManager, contextmanager
from typing import Callable, Iterator


@contextmanager
def held_by_another_thread(lock: Callable[[], AbstractContextManager[object]], wait_s: float = 30) -> Iterator[None]:
    """Enter ``lock()`` on a second thread, run the block while that thread holds it, then let go."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock():
            held.set()
            release.wait(wait_s)

    t = threading.Thread(target=hold, name="other-holder")
    t.start()
    try:
        assert held.wait(wait_s), "the other thread never got the lock"
        yield
    finally:
        release.set()
        t.join()
