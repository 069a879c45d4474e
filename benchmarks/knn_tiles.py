"""The KET KNN chunk graph and the KG-Retriever document layer, this checkout against another one
(issue 29): peak memory (tracemalloc: numpy's allocations included), wall and CPU seconds, and whether the
two give the same neighbours, on N passages of benchmarks/scale.py's corpus (hashing vectors).

    nice -n 10 python benchmarks/knn_tiles.py --passages 12000 --against ../main

Each side runs once, one after the other in this process (``--against``'s kgviz/index/knn.py and
doc_layer.py are loaded from its files; everything else they import is this checkout's).
Prints one JSON document.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _measured(fn: Callable[[], Any]) -> tuple[Any, float, float, float]:
    """(result, wall seconds, CPU seconds of this process, peak MB allocated during the call)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, round(seconds, 1), round(cpu, 1), round(peak / 2**20, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=12000)
    ap.add_argument("--against", required=True, help="another checkout (its kgviz/index/knn.py, doc_layer.py)")
    ap.add_argument("--k", type=int, default=2, help="KNN K (default: KetParams' 2)")
    ap.add_argument("--doc-k", type=int, default=3, help="document layer K")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale import corpus  # noqa: E402  (benchmarks/scale.py)

    from kgviz.index import doc_layer, knn
    from kgviz.providers.embedders import HashingEmbedder

    other = Path(args.against).resolve()
    old_knn = _module(other / "kgviz" / "index" / "knn.py", "_against_knn")
    # the other doc_layer.py imports from kgviz.index.knn: its own knn.py while it loads (the two
    # checkouts' knn helpers differ)
    this_knn = sys.modules["kgviz.index.knn"]
    sys.modules["kgviz.index.knn"] = old_knn
    try:
        old_doc = _module(other / "kgviz" / "index" / "doc_layer.py", "_against_doc_layer")
    finally:
        sys.modules["kgviz.index.knn"] = this_knn
    texts = [f"{r['title']}\n{r['text']}" for r in corpus(args.passages)]
    emb = np.asarray(HashingEmbedder().embed(texts), dtype=np.float32)
    report: dict[str, Any] = {"passages": args.passages, "dim": int(emb.shape[1]), "against": str(other),
                              "load_avg_1m": [round(os.getloadavg()[0], 1)]}
    sides = {}
    for side, (k_mod, d_mod) in (("against", (old_knn, old_doc)), ("this", (knn, doc_layer))):
        g, g_s, g_cpu, g_mb = _measured(lambda: k_mod.build_knn(texts, emb, args.k))
        d, d_s, d_cpu, d_mb = _measured(lambda: d_mod.top_k_neighbours(emb, args.doc_k))
        sides[side] = (g, d)
        report[side] = {"knn_s": g_s, "knn_cpu_s": g_cpu, "knn_peak_mb": g_mb,
                        "doc_layer_s": d_s, "doc_layer_cpu_s": d_cpu, "doc_layer_peak_mb": d_mb}
    (g0, d0), (g1, d1) = sides["against"], sides["this"]
    same_edges = all(np.array_equal(getattr(g0, f), getattr(g1, f)) for f in ("src", "dst", "kind"))
    report["knn_same_edges"] = same_edges
    report["knn_edges"] = len(g1)
    if same_edges:
        report["knn_weights_differing"] = int(np.count_nonzero(g0.weight != g1.weight))
        report["knn_weight_max_abs_diff"] = float(np.abs(g0.weight - g1.weight).max()) if len(g1) else 0.0
    report["doc_layer_same_neighbours"] = bool(np.array_equal(d0[0], d1[0]))
    report["doc_layer_cosines_differing"] = int(np.count_nonzero(d0[1] != d1[1]))
    report["doc_layer_cosine_max_abs_diff"] = float(np.abs(d0[1] - d1[1]).max()) if d1[1].size else 0.0
    report["load_avg_1m"].append(round(os.getloadavg()[0], 1))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
