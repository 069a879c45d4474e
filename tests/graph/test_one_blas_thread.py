"""Exact search's matrix-vector product runs on one BLAS thread, and concurrent searches share the
process-wide limit: it is set by the first in and restored by the last out (never left at 1, never
lifted under a search still running)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

from kgviz.graph import search
from kgviz.graph.search import ONE_BLAS_THREAD


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in ThreadpoolController().info() if lib["user_api"] == "blas"}


def test_the_limit_holds_while_any_search_runs_and_is_restored_after() -> None:
    np.ones((4, 4)) @ np.ones(4)  # numpy's BLAS is loaded
    before = _blas_threads()
    assert before
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, set[int]] = {}

    def first() -> None:
        with ONE_BLAS_THREAD:
            first_in.set()
            second_in.wait(10)
            seen["both"] = _blas_threads()
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with ONE_BLAS_THREAD:
            second_in.set()
            first_out.wait(10)
            seen["second alone"] = _blas_threads()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"both": {1}, "second alone": {1}}
    assert _blas_threads() == before


def test_ranking_runs_under_the_limit(monkeypatch) -> None:
    seen: list[set[int]] = []
    original = search.np.linalg.norm

    def norm_spy(x, *a, **kw):  # called inside the product's expression
        seen.append(_blas_threads())
        return original(x, *a, **kw)

    monkeypatch.setattr(search.np.linalg, "norm", norm_spy)
    matrix = np.eye(3, dtype=np.float32)
    ranked = search._rank(np.array(["a", "b", "c"]), matrix, np.array([0, 1, 0], dtype=np.float32), 2)
    assert ranked[0] == ("b", 1.0)
    assert seen and all(s == {1} for s in seen)


def test_the_limit_covers_scipys_blas_when_the_first_search_comes_before_scipy_loads_it() -> None:
    """NumPy and SciPy each bring an OpenBLAS; scipy.linalg loads SciPy's. A process whose first
    search ran before that left SciPy's library at every core (a test order showed it)."""
    code = (
        "import numpy as np\n"
        "from threadpoolctl import ThreadpoolController\n"
        "from kgviz.graph.search import _OneBlasThread\n"
        "limit = _OneBlasThread()\n"
        "with limit: pass\n"  # the first search: the controller is made now
        "import scipy.linalg\n"
        "with limit:\n"
        "    print(sorted({l['num_threads'] for l in ThreadpoolController().info() if l['user_api'] == 'blas'}))\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=Path(__file__).resolve().parents[2], check=True).stdout
    assert out.strip() == "[1]"
