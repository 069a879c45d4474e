"""Worker processes for the offline build's Python-bound work (issue 29): the pattern extractor
and the hashing embedder hold the GIL, so threads share one core.

A ``ProcessPool`` runs ``fn(*args)`` tasks in fresh interpreters (``python -m
kgviz.index.processes``) and hands the results back **in input order**, so a caller that merges
them as they come gets exactly what one process computing the tasks in turn would get.

Why not ``multiprocessing``: "fork" copies a threaded process (the app runs in Streamlit's
threaded server; Kùzu has its own threads), and a lock held by another thread at that moment stays
held in the child; "spawn" and "forkserver" run the ``__main__`` script again in every worker,
and a script that builds at its top level then opens the database a second time. A worker here
is started by ``subprocess`` (its child runs no Python code between fork and exec, so nothing of
this process is carried over) and imports only what the pickled task names. Tasks and replies
are pickles over the worker's stdin and stdout; the worker's own prints go to stderr.

Each worker has at most one task at a time (so neither side can block on a full pipe while the
other waits); the tasks go round the workers in turn and the results are read back in the same
turn. A task that raises stops the pool and the exception is raised in the caller, with the
worker's traceback as a note; a worker that dies is a BuildError. A set ``cancel`` event stops
handing out tasks; the tasks already running finish and are yielded, and ``cancelled`` says so.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import traceback
from collections import deque
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from kgviz.errors import BuildError

WORKER_EXIT_WAIT_S = 5.0  # an idle worker exits at once when its stdin closes; this bounds a stuck one


def process_count(workers: int, n_items: int, min_items: int) -> int:
    """Worker processes for ``n_items`` items of work: one per usable core up to ``workers``
    (BuildParams.workers, i.e. KGVIZ_WORKERS / --workers; 1 keeps the work in this process),
    and none below ``min_items``, where starting the processes costs more than they save."""
    if workers <= 1 or n_items < min_items:
        return 1
    from kgviz.providers.embedders import usable_cores  # numpy: not imported by a worker for nothing

    return max(1, min(int(workers), usable_cores()))


def _package_root() -> str:
    import kgviz

    return str(Path(kgviz.__file__).resolve().parent.parent)


class ProcessPool:
    """``n`` worker interpreters; use as a context manager (the workers end with it)."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"a process pool needs at least one worker, got {n}")
        env = dict(os.environ)
        # the workers import the same kgviz as this process (a worktree's, not an installed one)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH", "")) if p)
        self._procs: list[subprocess.Popen[bytes]] = []
        self.cancelled = False
        try:
            for _ in range(n):
                self._procs.append(subprocess.Popen([sys.executable, "-m", "kgviz.index.processes"], env=env,
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        except BaseException:
            self.close(kill=True)
            raise

    @property
    def size(self) -> int:
        return len(self._procs)

    def __enter__(self) -> ProcessPool:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.close(kill=exc_type is not None)

    def map(self, fn: Callable[..., Any], tasks: Iterable[tuple[Any, ...]],
            cancel: threading.Event | None = None) -> Iterator[Any]:
        """``fn(*args)`` for each args tuple of ``tasks``, yielded in input order. ``fn`` must be
        a module-level function (pickled by name)."""
        self.cancelled = False
        todo = iter(tasks)
        running: deque[int] = deque()  # worker indices, in the order their tasks were handed out
        stopped = False

        def hand_out(worker: int) -> None:
            nonlocal stopped
            if stopped:
                return
            args = next(todo, None)
            if args is None:
                stopped = True
                return
            if cancel is not None and cancel.is_set():  # only when work is left: all done is not a cancel
                stopped = self.cancelled = True
                return
            stdin = self._procs[worker].stdin
            assert stdin is not None
            try:
                pickle.dump((fn, tuple(args)), stdin, protocol=pickle.HIGHEST_PROTOCOL)
                stdin.flush()
            except BrokenPipeError:
                raise self._died(worker) from None
            running.append(worker)

        for w in range(len(self._procs)):
            hand_out(w)
        while running:
            worker = running.popleft()
            result = self._receive(worker)
            hand_out(worker)  # before the caller works on the result: the worker is not left idle
            yield result

    def _receive(self, worker: int) -> Any:
        stdout: IO[bytes] | None = self._procs[worker].stdout
        assert stdout is not None
        try:
            ok, value, trace = pickle.load(stdout)
        except EOFError:
            raise self._died(worker) from None
        if ok:
            return value
        self.close(kill=True)
        if isinstance(value, BaseException):
            value.add_note(f"in a build worker process:\n{trace}")
            raise value
        raise BuildError(f"a build worker process failed: {value}\n{trace}")

    def _died(self, worker: int) -> BuildError:
        proc = self._procs[worker]
        try:
            code = proc.wait(timeout=WORKER_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        self.close(kill=True)
        return BuildError(f"a build worker process ended unexpectedly (exit status {code}); its stderr is in the log",
                          hint="run the build again: finished work is kept and skipped")

    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self._procs]

    def kill(self) -> None:
        """Kill every worker now, from any thread: a ``map`` waiting on one raises BuildError."""
        for proc in list(self._procs):
            if proc.poll() is None:
                proc.kill()

    def close(self, kill: bool = False) -> None:
        """End the workers: closing stdin lets an idle one exit; ``kill`` (or a stuck one) kills."""
        for proc in self._procs:
            if kill and proc.poll() is None:
                proc.kill()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:  # a broken pipe to a dead worker: nothing left to flush
                        pass
        for proc in self._procs:
            try:
                proc.wait(timeout=WORKER_EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = []


def _portable(exc: BaseException) -> object:
    """The exception itself when it survives pickling, else its text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return f"{type(exc).__name__}: {exc}"


def serve() -> None:
    """A worker's loop: read (fn, args), reply (ok, value, traceback) until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print goes to stderr, not into the reply stream
    sys.stdout = sys.stderr
    tasks = sys.stdin.buffer
    while True:
        try:
            fn, args = pickle.load(tasks)
        except EOFError:
            return
        try:
            reply: tuple[bool, object, str] = (True, fn(*args), "")
        except BaseException as exc:  # every failure goes back to the caller, which raises it
            reply = (False, _portable(exc), traceback.format_exc())
        try:
            pickle.dump(reply, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
        except BrokenPipeError:  # the caller is gone
            return


if __name__ == "__main__":
    serve()
