"""The keyword layer's parts, old code against new, on the same inputs in one run (issue 29).

    nice -n 19 python benchmarks/ket_layer_speed.py --passages 10000 [--against 15120af] [--repeat 3]

The chunks are a build's (benchmarks/scale.py's corpus, chunked with the default BuildParams).
The old functions are the modules of commit ``--against`` (``git show``), loaded beside the
current ones (the whole-layer row: the old layer with the old sub-chunk split and normalisation
in this process, the current worker processes embedding for both); each part runs on the same inputs with both and its outputs are compared (equal, or
bit-equal for vectors). Printed per part: the best of ``--repeat`` runs, wall and CPU seconds.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# the modules whose old versions are loaded, in import order (each old one imports the old ones before it)
# (not kgviz.index.embed: worker processes are handed its functions and the embedder by reference,
# so both layers use the current one, with the current HashingEmbedder in the workers)
OLD_MODULES = ("kgviz.text", "kgviz.ingest.chunking", "kgviz.providers.embedders", "kgviz.index.knn",
               "kgviz.index.ket_keywords")


def load_old(commit: str) -> dict[str, types.ModuleType]:
    """The modules of OLD_MODULES at ``commit``, under their own names while each one's body runs
    (so an old module imports the old versions of the others), then the current ones put back."""
    saved = {name: sys.modules.get(name) for name in OLD_MODULES}
    for name in OLD_MODULES:  # the current ones, imported first
        importlib.import_module(name)
    old: dict[str, types.ModuleType] = {}
    try:
        for name in OLD_MODULES:
            path = name.replace(".", "/") + ".py"
            source = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True,
                                    capture_output=True, text=True).stdout
            spec = importlib.util.spec_from_loader(name, loader=None)
            assert spec is not None
            module = importlib.util.module_from_spec(spec)
            module.__file__ = f"{commit}:{path}"
            sys.modules[name] = module
            exec(compile(source, module.__file__, "exec"), module.__dict__)
            old[name] = module
    finally:
        for name, module in saved.items():
            if module is not None:
                sys.modules[name] = module
    return old


def chunks_of(n: int) -> list[tuple[str, str, str]]:
    import tempfile

    from scale import corpus

    from kgviz.index.pipeline import BuildParams
    from kgviz.ingest import load_paths
    from kgviz.ingest.chunking import chunk_document

    params = BuildParams()
    with tempfile.TemporaryDirectory(prefix="kgviz_ketspeed_") as work:
        f = Path(work) / "corpus.jsonl"
        f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in corpus(n)), "utf-8")
        docs = load_paths([f], max_bytes=f.stat().st_size + 1).documents
    return [(c.id, c.doc_id, c.text) for d in docs
            for c in chunk_document(d, chunk_tokens=params.chunk_tokens, overlap=params.chunk_overlap)]


def timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, float, float]:
    """(result, best wall s, its CPU s of this process)"""
    best = (float("inf"), 0.0)
    result = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        best = min(best, (time.perf_counter() - w, time.process_time() - c))
    return result, round(best[0], 3), round(best[1], 3)


def same(a: Any, b: Any) -> bool:
    import numpy as np
    import scipy.sparse as sp

    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if sp.issparse(a):
        return (a.shape == b.shape and a.indices.dtype == b.indices.dtype and a.indptr.dtype == b.indptr.dtype
                and a.data.tobytes() == b.data.tobytes() and a.indices.tobytes() == b.indices.tobytes()
                and a.indptr.tobytes() == b.indptr.tobytes())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def layer_rows(layer: Any) -> Any:
    kw = layer.has_keyword
    return [layer.subchunks, layer.sub_chunk_of, layer.keywords, kw.sub_ids, kw.keyword_ids, kw.sub, kw.kw,
            layer.stats()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=10_000)
    ap.add_argument("--against", default="15120af", help="the commit whose code is 'old'")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-layer", action="store_true", help="the parts only, not the whole layer")
    args = ap.parse_args()

    import numpy as np

    from kgviz.index import ket_keywords, knn
    from kgviz.index.ket import KetParams
    from kgviz.index.pipeline import BuildParams
    from kgviz.ingest import chunking
    from kgviz.providers import embedders
    from kgviz import text

    old = load_old(args.against)
    o_text, o_chunking, o_emb = old["kgviz.text"], old["kgviz.ingest.chunking"], old["kgviz.providers.embedders"]
    o_knn, o_kw = old["kgviz.index.knn"], old["kgviz.index.ket_keywords"]
    chunks = chunks_of(args.passages)
    params = BuildParams()
    rules = KetParams().keyword_rules(params.chunk_tokens)
    rows: list[dict[str, Any]] = []

    def part(name: str, old_fn: Callable[[], Any], new_fn: Callable[[], Any]) -> Any:
        a, ow, oc = timed(old_fn, args.repeat)
        b, nw, nc = timed(new_fn, args.repeat)
        rows.append({"part": name, "old_wall_s": ow, "new_wall_s": nw, "old_cpu_s": oc, "new_cpu_s": nc,
                     "equal": same(a, b)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        return b

    def spans(mod: Any) -> Callable[[], Any]:
        return lambda: [mod.subchunk_spans(t, tau=rules.tau, target_tokens=rules.subchunk_tokens)
                        for _, _, t in chunks]

    sub_spans = part("subchunk_spans", spans(o_chunking), spans(chunking))
    subs = [t[a:b] for (_, _, t), ss in zip(chunks, sub_spans) for a, b in ss]
    sents = part("split_sentences", lambda: [o_text.split_sentences(s) for s in subs],
                 lambda: [text.split_sentences(s) for s in subs])
    unique = list(dict.fromkeys(s for ss in sents for s in ss))
    part("term_matrix", lambda: o_knn.term_matrix(unique, rules.min_word_len),
         lambda: knn.term_matrix(unique, rules.min_word_len))
    sample = unique[: min(len(unique), 20_000)]
    part("hashing embed (20k sentences, one process)",
         lambda: o_emb.HashingEmbedder()._embed(sample), lambda: embedders.HashingEmbedder()._embed(sample))
    sent_emb = embedders.HashingEmbedder()._embed(unique)
    sent_word, _ = knn.term_matrix(unique, rules.min_word_len)
    word_sent = sent_word.T.tocsr()
    product = np.asarray(word_sent @ sent_emb)
    part("l2_normalise (keywords x 768)", lambda: o_emb.l2_normalise(product), lambda: embedders.l2_normalise(product))
    part("sorted keyword rows", lambda: [np.sort(word_sent.indices[word_sent.indptr[i]:word_sent.indptr[i + 1]]).tolist()
                                         for i in range(word_sent.shape[0])],
         lambda: (lambda b, s: [s[b[i]:b[i + 1]] for i in range(len(b) - 1)])(*knn.sorted_rows(word_sent)))
    if not args.skip_layer:
        emb = embedders.HashingEmbedder()
        part(f"build_keyword_layer (workers={params.workers})",
             lambda: layer_rows(o_kw.build_keyword_layer(chunks, emb, rules, batch_size=params.embed_batch_size,
                                                         workers=params.workers)),
             lambda: layer_rows(ket_keywords.build_keyword_layer(chunks, emb, rules, batch_size=params.embed_batch_size,
                                                                 workers=params.workers)))
    print(json.dumps({"passages": args.passages, "chunks": len(chunks), "sub_chunks": len(subs),
                      "sentences": len(unique), "against": args.against, "repeat": args.repeat, "parts": rows},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
