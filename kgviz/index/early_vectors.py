"""The exact search's vector files of the tables a build loaded whole, made in a worker process
while the doc_layer and ket stages run (issue 29).

The index stage wrote each table's memory-mapped vector files and their by-column copy
(kgviz.graph.search.prepare_exact_search) on one core, after the doc_layer and ket stages had
left the other core mostly idle (at 100,000 passages: 126 s; 1.47M Triple and 0.65M Entity rows
of 768 floats, sorted by id). The files of a table the write stage loaded whole into an empty
table depend only on the build's spill (the vectors and ids, kgviz.index.spill), complete when
the write stage ends. So:

1. after the write stage, ``EarlyVectorFiles.start`` hands those tables to one worker process
   (kgviz.index.processes), which reads the spill and writes the files
   (``search.store_exact_files``) and never opens the database, while this process runs the
   doc_layer and ket stages;
2. the index stage ``wait``s for it, then runs as before: ``search._exact_matrix`` reads the
   table's ids from Kùzu and adopts the files only when their id digest is that of those ids
   (else it writes them again, as it always did);
3. ``wait`` raises the worker's error as the worker raised it (a full disk is a DiskFullError,
   as from the index stage); a worker that died is a BuildError.

A build run inside this one (same thread: kgviz.index.pipeline) waits, before its own index stage
writes any vector file, for the workers of the builds around it (``wait_for_others``): a worker
still writing would replace the files the inner build stores (the file names are per table),
and the outer build's index stage then merges its rows into the inner build's files.
A build that stops before its index stage (an error, a cancel) kills the worker when it leaves
(``stop``) and removes the temporary files it was writing; files it finished are whole, and the
next build's index stage adopts them (same id digest) or writes them again. A worker whose build
process was killed removes its temporary files and exits (``_exit_with_parent``).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from kgviz.graph import search, vector_file
from kgviz.index.processes import ProcessPool
from kgviz.index.spill import VectorSpill

EARLY_MIN_ROWS = 50_000  # ours: fewer rows take the index stage ~1 s, about a worker's start-up
# ours: entries of the CSC copy gathered at once in the worker (~18 bytes each with the index
# cast and the gather's temporaries): a quarter of the index stage's, because the worker runs
# beside the ket stage's Keyword COPY, the build's peak (issue 29); the files are the same
CSC_BUFFER_ENTRIES = 1 << 22
PARENT_POLL_S = 0.5  # how often a worker checks that its build process is still there
log = logging.getLogger(__name__)
# the workers under way in this process, per workspace (``wait_for_others``)
_RUNNING: dict[str, list[EarlyVectorFiles]] = {}
_RUNNING_LOCK = threading.Lock()


def wait_for_others(workspace: Path, mine: EarlyVectorFiles | None) -> None:
    """Wait until the workers other builds of ``workspace`` in this process started (not
    ``mine``) have written their files; their builds take their results and errors."""
    with _RUNNING_LOCK:
        others = [e for e in _RUNNING.get(str(Path(workspace).resolve()), []) if e is not mine]
    for other in others:
        thread = other._thread
        if thread is not None:
            thread.join()

_watched: set[str] = set()  # workspaces whose temporaries this worker process cleans if orphaned


def write_from_spill(workspace: str, spill: VectorSpill, table: str) -> dict[str, Any]:
    """The worker's task: ``table``'s vector files from the spill. ``written`` is True when they
    were stored, False when the folder could not be written, None when the spill was gone (the
    index stage then does what it did without the worker)."""
    _exit_with_parent(workspace)
    t0 = time.perf_counter()
    loaded = spill.loaded(table)
    written = None if loaded is None else search.store_exact_files(Path(workspace), table, *loaded, CSC_BUFFER_ENTRIES)
    return {"table": table, "written": written, "seconds": round(time.perf_counter() - t0, 3),
            "peak_rss_mb": _peak_rss_mb()}


def _peak_rss_mb() -> float | None:
    """This worker's peak RSS (VmHWM: ru_maxrss keeps the build process's, from before the exec)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(round(int(line.split()[1]) / 1024, 1) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):  # not Linux
        return None


def _exit_with_parent(workspace: str) -> None:
    """Start (once per workspace) a thread that, when this worker's build process is gone (killed:
    it could not stop the worker), removes this worker's temporary files and ends the process."""
    if workspace in _watched:
        return
    _watched.add(workspace)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        vector_file.remove_temporaries(Path(workspace), os.getpid())
        os._exit(1)

    threading.Thread(target=watch, name="kgviz-parent-watch", daemon=True).start()


class EarlyVectorFiles:
    """One build's worker for the vector files; a context manager whose exit stops a worker still
    running (``stop``). ``start`` once, after the write stage; ``wait`` in the index stage."""

    def __init__(self) -> None:
        self._pool: ProcessPool | None = None
        self._thread: threading.Thread | None = None
        self._workspace = Path()
        self._pids: list[int] = []
        self._error: BaseException | None = None
        self.results: list[dict[str, Any]] = []  # the tasks' replies, in table order

    def __enter__(self) -> EarlyVectorFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, workspace: Path, spill: VectorSpill, tables: list[str]) -> None:
        """Hand ``tables`` (each loaded whole, in its spill, into a table that held no other row)
        to a worker process; returns at once. Nothing is started for no tables."""
        if not tables or self._thread is not None:
            return
        self._workspace = Path(workspace)
        with _RUNNING_LOCK:
            _RUNNING.setdefault(str(self._workspace.resolve()), []).append(self)
        self._pool = ProcessPool(1)
        self._pids = self._pool.pids
        tasks = [(str(workspace), spill, table) for table in tables]
        self._thread = threading.Thread(target=self._collect, args=(self._pool, tasks),
                                        name="kgviz-early-vectors", daemon=True)
        self._thread.start()

    def _collect(self, pool: ProcessPool, tasks: list[tuple[str, VectorSpill, str]]) -> None:
        # this thread only waits on the worker's pipe; it never touches the database
        try:
            for reply in pool.map(write_from_spill, tasks):
                self.results.append(reply)
        except BaseException as err:  # raised by wait(), in the build's thread
            self._error = err

    def wait(self) -> set[str]:
        """Wait for the worker; the tables whose files it stored. Raises the worker's error."""
        if self._thread is None:
            return set()
        t0 = time.perf_counter()
        self._thread.join()
        self._end()
        log.info("%s: the index stage waited %.1f s for the vector files' worker", self._workspace,
                 time.perf_counter() - t0)
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        for r in self.results:
            log.info("%s: %s's vector files made beside the graph writes in %.1f s (worker peak RSS %s MB)",
                     self._workspace, r["table"], r["seconds"], r["peak_rss_mb"])
        return {r["table"] for r in self.results if r["written"]}

    def stop(self) -> None:
        """Kill a worker still running and remove the temporary files it was writing (the build
        stopped before its index stage); nothing when ``wait`` ended it."""
        if self._thread is None or self._pool is None:
            return
        self._pool.kill()
        self._thread.join()
        self._end()
        self._error = None  # the build is already leaving on its own error or cancel

    def _end(self) -> None:
        """Close the pool (its worker has ended when this returns), then remove the temporary
        files a killed or dead worker left."""
        if self._pool is not None:
            self._pool.close()
        self._pool, self._thread = None, None
        with _RUNNING_LOCK:
            key = str(self._workspace.resolve())
            running = [e for e in _RUNNING.get(key, []) if e is not self]
            if running:
                _RUNNING[key] = running
            else:
                _RUNNING.pop(key, None)
        for pid in self._pids:
            vector_file.remove_temporaries(self._workspace, pid)
        self._pids = []
