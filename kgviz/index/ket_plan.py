"""KET-RAG's core plan (KNN graph, PageRank, core chunks: Algorithm 3 lines 2-8) kept in the
workspace by the knn stage, so a build that resumes an interrupted one does not compute it again
(issue 29: the exact KNN graph is quadratic, 247 s of a 479 s resume at 100,000 passages).

Why a file written after the knn stage, not a signature stored with the KNN graph by
``write_core``: a build stopped in its write, doc_layer or ket stage (before ``write_core``) has
no KNN graph of its chunks in the database, yet its plan is known; the file serves every stage
after knn, and a re-run of a finished build too.

The plan is a pure function of the chunks (ids and texts, in id order), the KET parameters that
shape it (``PLAN_FIELDS``), the embedder (the chunk vectors are its output for those texts) and
this code (``PLAN_VERSION``, the KNN tile size, how the semantic neighbours are searched:
``cells.settings``). Those are the file's key, so a plan is reused
only when it provably describes the chunks now present; anything else (new chunks, another
parameter, another embedder, a missing file, a file that fails its content digest) is computed
again, and the build report says which. Files are written aside and renamed, the key last
(kgviz.graph.vector_file.write_arrays), so a build killed while writing leaves no key and the
next one computes.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from kgviz.errors import DiskFullError
from kgviz.graph import vector_file
from kgviz.index.ket import CorePlan, KetParams, core_ranking, n_core
from kgviz.index import cells
from kgviz.index.knn import LEXICAL, SEMANTIC, KnnGraph
from kgviz.index.top_k import TILE

log = logging.getLogger(__name__)

PLAN_FOLDER = "ket_plan"
PLAN_VERSION = 1
# the KetParams fields plan_core reads: the KNN graph (k, exclude_lexical, min_word_len), PageRank
# (damping, undirected) and the core selection (beta, selection, seed); τ and the keyword rules
# shape only the keyword layer
PLAN_FIELDS = ("k", "exclude_lexical", "min_word_len", "damping", "undirected", "beta", "selection", "seed")
KINDS = (LEXICAL, SEMANTIC)  # KnnGraph.kind stored as its index here
REUSED = "reused"


def folder(workspace: str | Path) -> Path:
    return Path(workspace) / vector_file.VECTOR_DIR / PLAN_FOLDER


def chunks_digest(ids: Sequence[str], texts: Sequence[str]) -> str:
    """sha256 over every (id, text) in the given order, each length-prefixed (so no id or text
    can run into the next)."""
    h = hashlib.sha256()
    for part in (p for pair in zip(ids, texts) for p in pair):
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "big"))
        h.update(b)
    return h.hexdigest()


def plan_key(ids: Sequence[str], texts: Sequence[str], params: KetParams, embedder_id: str, dim: int) -> dict[str, Any]:
    """What a plan over these chunks (in id order) depends on."""
    return {"version": PLAN_VERSION, "tile": TILE, "search": cells.settings(len(ids)), "n": len(ids),
            "chunks": chunks_digest(ids, texts),
            "params": {f: getattr(params, f) for f in PLAN_FIELDS}, "embedder": embedder_id, "dim": int(dim)}


def _content_digest(arrays: dict[str, np.ndarray]) -> np.ndarray:
    h = hashlib.sha256()
    for name in sorted(arrays):
        h.update(name.encode() + b"\0" + np.ascontiguousarray(arrays[name]).tobytes())
    return np.frombuffer(h.digest(), dtype=np.uint8).copy()


def save(workspace: str | Path, key: dict[str, Any], plan: CorePlan) -> str | None:
    """Keep ``plan`` under ``key``; None when kept, else why not (logged: the build goes on, and a
    resumed one computes the plan again)."""
    codes = {kind: i for i, kind in enumerate(KINDS)}
    arrays: dict[str, np.ndarray] = {"src": np.asarray(plan.knn.src, dtype=np.int64), "dst": np.asarray(plan.knn.dst, dtype=np.int64),
              "kind": np.asarray([codes[k] for k in plan.knn.kind.tolist()], dtype=np.uint8),
              "weight": np.asarray(plan.knn.weight, dtype=np.float64),
              "pagerank": np.asarray(plan.pagerank, dtype=np.float64)}
    arrays["digest"] = _content_digest(arrays)
    try:
        vector_file.write_arrays(folder(workspace), key, arrays)
    except (OSError, DiskFullError) as err:
        log.warning("KET plan not kept in %s (%s): a resumed build computes it again", folder(workspace), err)
        return str(err)
    return None


def _differs(stored: Any, key: dict[str, Any]) -> str:
    """Why a stored key is not ``key``, in words."""
    if not isinstance(stored, dict):
        return "its key is damaged"
    if stored.get("version") != key["version"] or stored.get("tile") != key["tile"]:
        return "it was made by another version of kgviz"
    if (stored.get("embedder"), stored.get("dim")) != (key["embedder"], key["dim"]):
        return "it was made with another embedder"
    if stored.get("n") != key["n"] or stored.get("chunks") != key["chunks"]:
        return f"the chunks changed ({stored.get('n')} planned, {key['n']} now)"
    old = stored.get("params")
    old = old if isinstance(old, dict) else {}
    changed = [f for f in PLAN_FIELDS if old.get(f) != key["params"][f]]
    return f"KET parameters changed ({', '.join(changed)})" if changed else "its key differs"


def load(workspace: str | Path, key: dict[str, Any], ids: list[str], params: KetParams) -> tuple[CorePlan | None, str]:
    """(the kept plan over ``ids`` (sorted, as ``key`` was made), REUSED) when one is kept for
    ``key`` and whole; else (None, why it is computed)."""
    t0 = time.perf_counter()
    where = folder(workspace)
    try:
        stored = json.loads((where / "key.json").read_text("utf-8")).get("key")
    except FileNotFoundError:
        return None, "no plan was kept"
    except (OSError, ValueError, AttributeError) as err:
        log.warning("%s: the kept KET plan is damaged (%s); it is computed again", where, err)
        return None, "the kept plan is damaged"
    if stored != key:
        return None, f"the kept plan does not fit: {_differs(stored, key)}"
    arrays = vector_file.load_arrays(where, key)  # damaged files are logged there
    if arrays is None or "digest" not in arrays:
        return None, "the kept plan is damaged"
    digest = arrays.pop("digest")
    n = len(ids)
    src, dst, kind, weight, pr = (arrays.get(a) for a in ("src", "dst", "kind", "weight", "pagerank"))
    if (src is None or dst is None or kind is None or weight is None or pr is None
            or not np.array_equal(digest, _content_digest(arrays)) or pr.shape != (n,)
            or not (src.shape == dst.shape == kind.shape == weight.shape) or (src.size and max(src.max(), dst.max()) >= n)
            or (kind.size and kind.max() >= len(KINDS))):
        log.warning("%s: the kept KET plan is damaged (its content does not match its digest or its shapes); "
                    "it is computed again", where)
        return None, "the kept plan is damaged"
    knn = KnnGraph(src, dst, np.asarray(KINDS, dtype=object)[kind], weight, n)
    ranking = core_ranking(ids, pr.tolist(), params.selection, params.seed)
    core = set(ranking[: n_core(n, params.beta)])
    return CorePlan(list(ids), knn, pr, ranking, core, params, time.perf_counter() - t0), REUSED
