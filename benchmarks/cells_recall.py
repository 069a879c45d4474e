"""The cell search of kgviz.index.cells against every pair (issue 29): recall of each row's k best,
seconds of each, on N passages of benchmarks/scale.py's corpus embedded with the hashing embedder
(the offline build's vectors). ``--kind cosine`` (the document layer: document texts as it embeds
them) or ``lexical`` (KET's lexical KNN edges: shared keywords of the passage texts, the cells
made from their vectors as build_knn makes them).

    KGVIZ_DATA=../shared/data python benchmarks/cells_recall.py --passages 100000 --k 3 --probes 4 8 16

Recall: of the exact search's (row, neighbour) pairs with a positive score (what a layer links),
the share the cell search also returns; "score kept": the mean of the found scores over the mean
of the exact ones (shared-keyword counts tie often, so a different neighbour of equal count is a
miss of recall but not of score). Prints one JSON document.
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
    ap.add_argument("--kind", choices=["cosine", "lexical"], default="cosine")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale import corpus  # noqa: E402  (benchmarks/scale.py)

    from kgviz.index import cells
    from kgviz.index.embed import document_text, embed_texts
    from kgviz.index.knn import term_matrix
    from kgviz.index.top_k import symmetric_top_k
    from kgviz.providers.embedders import HashingEmbedder

    docs = corpus(args.passages)
    texts = [document_text(d["title"], d["text"]) if args.kind == "cosine" else d["text"] for d in docs]
    emb = embed_texts(HashingEmbedder(), texts, 256, workers=2)
    x = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-30)
    words = term_matrix(texts)[0] if args.kind == "lexical" else None
    t0 = time.perf_counter()
    if words is None:
        exact = cells.cosine_top_k(x, args.k, all_pairs_max_rows=len(x))
    else:
        wt = words.T.tocsr()
        exact = symmetric_top_k(lambda r0, r1, c0, c1: (words[r0:r1] @ wt[:, c0:c1]).toarray(), len(x), args.k)
    exact_s = time.perf_counter() - t0
    want = _pairs(exact)
    exact_mean = float(exact[2][exact[2] > 0].mean())
    out: dict[str, object] = {"passages": len(x), "kind": args.kind, "k": args.k, "cells": cells.n_cells(len(x)),
                              "exact_s": round(exact_s, 1), "load_avg_1m": round(os.getloadavg()[0], 1), "probes": {}}
    for p in args.probes:
        t0 = time.perf_counter()
        index = cells.Cells.of(x, probes=p)
        if words is None:
            got = index.top_k(lambda rows, cols: x[rows] @ x[cols].T, args.k)
        else:
            got = index.top_k(lambda rows, cols: (words[rows] @ words[cols].T).toarray(), args.k)
        seconds = time.perf_counter() - t0
        have = _pairs(got)
        out["probes"][str(p)] = {  # type: ignore[index]
            "seconds": round(seconds, 1), "recall": round(len(want & have) / max(1, len(want)), 4),
            "score_kept": round(float(got[2][got[2] > 0].mean()) / exact_mean, 4),
            "rows_short": int(len(x) - np.unique(got[0]).size)}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
