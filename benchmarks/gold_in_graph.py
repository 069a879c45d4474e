"""Gold-in-graph share of an offline build: how many questions have a gold answer in the graph.

Builds a corpus offline (pattern extractor, hashing embedder) into a temporary workspace with
kgviz's own pipeline, then applies the gold funnel's definition (kgviz.verify.funnel): a gold
answer, SQuAD-normalised, contained as whole tokens in an Entity name (or alias) or a Triple
text. Also prints graph shape figures: triples per chunk, entities, the share of entities that
only one fact touches (degree 1), build seconds and peak RSS. Prints JSON.

    python benchmarks/gold_in_graph.py [--data DIR ...] [--limit-questions N]

``--data`` takes dataset folders holding corpus.jsonl and questions.jsonl (default: hotpotqa,
2wikimultihopqa and musique_hipporag_train under ../shared/data). The whole corpus is built;
every question is scored (or the first N).
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.answer_norm import normalize_answer  # noqa: E402
from kgviz.graph import reads  # noqa: E402
from kgviz.graph.store import GraphStore  # noqa: E402
from kgviz.index.pipeline import BuildParams, build  # noqa: E402
from kgviz.ingest import load_paths  # noqa: E402
from kgviz.providers.embedders import HashingEmbedder  # noqa: E402
from kgviz.providers.offline import OfflineLLM  # noqa: E402
from kgviz.reasoning import Reasoner  # noqa: E402

# ../shared/data beside the checkout, or beside the folder of worktrees
DATA = next((p for p in (ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data") if p.is_dir()),
            ROOT.parent / "shared" / "data")
DEFAULT_SETS = ("hotpotqa", "2wikimultihopqa", "musique_hipporag_train")


def _haystack(texts: list[str]) -> str:
    # one padded line per text: a needle " a b " can only match inside one line, as in
    # metrics.contains (whole tokens of one normalised text)
    return "\n".join(f" {normalize_answer(t)} " for t in texts if t)


def measure(folder: Path, limit_questions: int = 0) -> dict[str, object]:
    docs = load_paths([folder / "corpus.jsonl"]).documents
    questions = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines() if line.strip()]
    if limit_questions:
        questions = questions[:limit_questions]
    db = Path(tempfile.mkdtemp(prefix="kgviz_gold_in_graph_")) / "ws"
    embedder = HashingEmbedder()
    store = GraphStore.open(db, embedder_id=embedder.id, dim=embedder.dim)
    try:
        t0 = time.perf_counter()
        build(docs, store, Reasoner(OfflineLLM(), embedder), BuildParams())
        seconds = time.perf_counter() - t0
        counts = store.counts()
        entities = reads.entity_names_all(store)
        triples = reads.triple_facts_all(store)
        chunks = reads.chunk_texts_all(store)
    finally:
        store.close()
        shutil.rmtree(db.parent, ignore_errors=True)
    names = _haystack([f"{r['name'] or ''}" for r in entities]
                      + [a for r in entities for a in (r["aliases"] or "").split("|") if a])
    facts = _haystack([r["text"] or "" for r in triples])
    corpus = _haystack([r["text"] or "" for r in chunks])
    in_graph = in_corpus = in_entities = 0
    for q in questions:
        golds = [normalize_answer(g) for g in q["answers"] if isinstance(g, str) and normalize_answer(g)]
        hit = lambda hay: any(f" {g} " in hay for g in golds)  # noqa: E731
        in_corpus += hit(corpus)
        ents = hit(names)
        in_entities += ents
        in_graph += ents or hit(facts)
    degree: Counter[str] = Counter()
    for r in triples:
        for end in {r["s"], r["o"]}:
            if end and str(end).startswith("ent:"):
                degree[str(end)] += 1
    n_entities = len(entities)
    n_q = len(questions)
    return {
        "set": folder.name,
        "questions": n_q,
        "documents": len(docs),
        "gold_in_corpus_pct": round(100 * in_corpus / n_q, 1),
        "gold_in_graph_pct": round(100 * in_graph / n_q, 1),
        "gold_in_entity_names_pct": round(100 * in_entities / n_q, 1),
        "chunks": counts.get("Chunk", 0),
        "triples": counts.get("Triple", 0),
        "triples_per_chunk": round(counts.get("Triple", 0) / max(1, counts.get("Chunk", 0)), 2),
        "entities": n_entities,
        "degree_1_entities_pct": round(100 * sum(1 for e in entities if degree[e["id"]] == 1) / max(1, n_entities), 1),
        "degree_0_entities": sum(1 for e in entities if degree[e["id"]] == 0),
        "build_seconds": round(seconds, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, nargs="*", default=[DATA / s for s in DEFAULT_SETS])
    ap.add_argument("--limit-questions", type=int, default=0)
    args = ap.parse_args()
    missing = [str(d) for d in args.data if not (d / "corpus.jsonl").exists()]
    if missing:
        print(json.dumps({"error": f"no corpus.jsonl in {missing}"}))
        return 2
    out = [measure(d, args.limit_questions) for d in args.data]
    peak = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps({"embedder": "hashing", "mode": "offline", "sets": out, "peak_rss_mb": peak}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
