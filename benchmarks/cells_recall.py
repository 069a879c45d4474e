"""The cell search of kgviz.index.cells against every pair (issue 29): recall of each row's k best
cosines, seconds of each, on N passages of benchmarks/scale.py's corpus embedded with the hashing
embedder (the offline build's vectors; document texts as the document layer embeds them).

    KGVIZ_DATA=../shared/data python benchmarks/cells_recall.py --passages 100000 --k 3 --probes 4 8 16

Recall: of the exact search's (row, neighbour) pairs with a positive cosine (what a layer links),
the share the cell search also returns; "cosine kept": the mean of each row's found cosines over
the mean of its exact ones. Prints one JSON document.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _pairs(found: tuple[np.ndarray, np.ndarray, np.ndarray]) -> set[tuple[int, int]]:
    r, c, v = found
    keep = v > 0
    return set(zip(r[keep].tolist(), c[keep].tolist()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=30000)
    ap.add_argument("--k", type=int, default=3, help="neighbours per row (3: the document layer's K)")
    ap.add_argument("--probes", type=int, nargs="+", default=[8])
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale import corpus  # noqa: E402  (benchmarks/scale.py)

    from kgviz.index import cells
    from kgviz.index.embed import document_text, embed_texts
    from kgviz.providers.embedders import HashingEmbedder

    docs = corpus(args.passages)
    emb = embed_texts(HashingEmbedder(), [document_text(d["title"], d["text"]) for d in docs], 256, workers=2)
    x = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-30)
    t0 = time.perf_counter()
    exact = cells.cosine_top_k(x, args.k, all_pairs_max_rows=len(x))
    exact_s = time.perf_counter() - t0
    want = _pairs(exact)
    exact_mean = float(exact[2][exact[2] > 0].mean())
    out: dict[str, object] = {"passages": len(x), "k": args.k, "cells": cells.n_cells(len(x)),
                              "exact_s": round(exact_s, 1), "load_avg_1m": round(os.getloadavg()[0], 1), "probes": {}}
    for p in args.probes:
        t0 = time.perf_counter()
        got = cells.cell_top_k(x, args.k, probes=p)
        seconds = time.perf_counter() - t0
        have = _pairs(got)
        out["probes"][str(p)] = {  # type: ignore[index]
            "seconds": round(seconds, 1), "recall": round(len(want & have) / max(1, len(want)), 4),
            "cosine_kept": round(float(got[2][got[2] > 0].mean()) / exact_mean, 4),
            "rows_short": int(len(x) - np.unique(got[0]).size)}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
