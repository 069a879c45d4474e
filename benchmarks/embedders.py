"""The hashing embedder and a neural one side by side: load time, embedding throughput, and a small
dense-retrieval quality figure on HotpotQA. Prints one JSON document.

    python3 benchmarks/embedders.py [--embedder SPEC]... [--questions 100] [--data DIR]

Default embedders: ``hashing``, plus ``fastembed:sentence-transformers/all-MiniLM-L6-v2@$KGVIZ_EMBEDDER_DIR``
when KGVIZ_EMBEDDER_DIR is set (``python3 scripts/make_minilm_dir.py DIR`` makes one). Every
embedder is named explicitly: ``auto`` is refused here, so a figure always says what produced it.

Figures per embedder:
- ``load_s``: building it in this process (for fastembed: the library import, the ONNX session and
  the tokenizer; the first fastembed spec pays the import);
- ``texts_per_s``: the whole corpus (title + text per passage) embedded once, in the embedder's
  own batches;
- ``peak_rss_mb_so_far``: the process's peak resident memory after this embedder (cumulative);
- ``gold_in_top5_any`` / ``gold_in_top5_all``: over the first ``--questions`` questions, the share
  whose gold supporting passages (``supporting_ids``) have at least one / all of them among the 5
  passages of the whole corpus with the highest cosine to the question (ties broken by passage id).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.provider_specs import DIR_MODEL  # noqa: E402
from kgviz.providers.factory import make_embedder, parse_embedder_spec  # noqa: E402

TOP_K = 5
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "hotpotqa"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def top_k(scores: np.ndarray, ids: list[str], k: int) -> list[str]:
    """The k best passages by (score descending, id ascending): repeatable under exact ties."""
    order = np.lexsort((np.asarray(ids), -scores))
    return [ids[i] for i in order[:k]]


def measure(spec: str, corpus: list[dict], questions: list[dict]) -> dict:
    t0 = time.perf_counter()
    emb, _ = make_embedder(spec, load_timeout_s=300, fallback=False)  # a failure is an error here, not hashing
    load_s = time.perf_counter() - t0
    ids = [p["id"] for p in corpus]
    texts = [f"{p['title']}. {p['text']}" for p in corpus]
    t0 = time.perf_counter()
    passages = emb.embed(texts)
    embed_s = time.perf_counter() - t0
    qv = emb.embed([q["question"] for q in questions])
    any_hit = all_hit = 0
    for q, v in zip(questions, qv):
        best = set(top_k(passages @ v, ids, TOP_K))
        gold = set(q["supporting_ids"])
        any_hit += bool(gold & best)
        all_hit += gold <= best
    n = len(questions)
    return {"spec": spec, "id": emb.id, "dim": emb.dim, "load_s": round(load_s, 3),
            "peak_rss_mb_so_far": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "embed_texts": len(texts), "embed_s": round(embed_s, 2), "texts_per_s": round(len(texts) / embed_s, 1),
            f"gold_in_top{TOP_K}_any": round(100 * any_hit / n, 1), f"gold_in_top{TOP_K}_all": round(100 * all_hit / n, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", action="append", help="an embedder spec (repeatable); not auto")
    ap.add_argument("--questions", type=int, default=100, help="first N questions (default 100)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a folder with corpus.jsonl and questions.jsonl")
    args = ap.parse_args()
    specs = args.embedder or ["hashing"]
    if not args.embedder and os.environ.get("KGVIZ_EMBEDDER_DIR"):
        specs.append(f"fastembed:{DIR_MODEL}@{os.environ['KGVIZ_EMBEDDER_DIR']}")
    if any(parse_embedder_spec(s)[0] == "auto" for s in specs):
        ap.error("name each embedder explicitly (auto depends on the machine)")
    if not (args.data / "corpus.jsonl").is_file():
        ap.error(f"{args.data} holds no corpus.jsonl (the shared data folder is needed)")
    corpus = _jsonl(args.data / "corpus.jsonl")
    questions = _jsonl(args.data / "questions.jsonl")[: args.questions]
    print(json.dumps({"data": str(args.data), "passages": len(corpus), "questions": len(questions), "k": TOP_K,
                      "cpus": os.cpu_count(), "embedders": [measure(s, corpus, questions) for s in specs]},
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
