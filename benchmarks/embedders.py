"""The hashing embedder and a neural one side by side: load time, embedding throughput, and a small
dense-retrieval quality figure on HotpotQA. Prints one JSON document.

    python3 benchmarks/embedders.py [--embedder SPEC]... [--questions 100] [--data DIR] [--passages N]
                                    [--against CHECKOUT [--rounds 2]] [--throughput-passages N [--rounds 2]]

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

``--passages N`` uses the first N passages only. ``--against CHECKOUT`` (another kgviz checkout,
e.g. a ``git worktree`` of an older commit) adds, for each spec (hashing too), a before -> after
throughput comparison in this one run: the same passages are embedded by CHECKOUT's code and by
this checkout's code, each in a fresh child process, alternating for ``--rounds`` rounds (the
machine's load changes; both sides see the same changes). Per round and side: passages/s, the
CPU seconds the child spent embedding and passages per CPU second (what the work costs, however
busy the machine: on N otherwise idle cores the wall rate can reach at most N times it), the
1-minute load average at start and end, the child's peak RSS; then the median per side, the round
whose load was lowest, and the smallest cosine between the two sides' vectors of the same passage
(the rows kept in corpus order; 1.0 = identical).

``--throughput-passages N`` compares the specs with one another instead, in this one run: the first
N passages embedded by each spec in a fresh child process of this checkout, the specs alternating
for ``--rounds`` rounds, with the same per-round figures as ``--against`` (passages/s, passages per
CPU second, load average, peak RSS), their medians, and the smallest and mean cosine of each
passage's vector against the first fastembed spec's. The quality figures then also give, per spec, the
smallest and mean cosine of its corpus vectors against the first neural (fastembed) spec's
(``cosine_vs_first_neural``: how far e.g. ``fastembed:<model>+int8-activations@DIR`` moved the
vectors of ``fastembed:<model>@DIR``).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
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


def measure(spec: str, corpus: list[dict], questions: list[dict], reference: dict[str, np.ndarray]) -> dict:
    """``reference``: the first neural spec's corpus vectors, set by its own call (spec -> vectors)."""
    t0 = time.perf_counter()
    emb, _ = make_embedder(spec, load_timeout_s=300, fallback=False)  # a failure is an error here, not hashing
    load_s = time.perf_counter() - t0
    ids = [p["id"] for p in corpus]
    texts = [f"{p['title']}. {p['text']}" for p in corpus]
    t0, c0 = time.perf_counter(), time.process_time()
    passages = emb.embed(texts)
    embed_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    compared: dict = {}
    if emb.id.startswith("fastembed:"):
        if not reference:
            reference[spec] = passages
        first, vectors = next(iter(reference.items()))
        cos = _row_cosines(vectors, passages)
        compared = {"cosine_vs_first_neural": {"against": first, "min": round(float(cos.min()), 6),
                                               "mean": round(float(cos.mean()), 6)}}
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
            "texts_per_cpu_s": round(len(texts) / cpu_s, 1) if cpu_s > 0 else None, **compared,
            f"gold_in_top{TOP_K}_any": round(100 * any_hit / n, 1), f"gold_in_top{TOP_K}_all": round(100 * all_hit / n, 1)}


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The cosine of each row of ``a`` with the same row of ``b``."""
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# Run in a child process with a checkout's root first on sys.path: embeds the passages with that
# checkout's code and saves the vectors. Nothing but make_embedder and embed is used, so it runs on
# older checkouts too.
_CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
import numpy as np
root, spec, texts_file, out = sys.argv[1:5]
sys.path.insert(0, root)
import kgviz
if not Path(kgviz.__file__).resolve().is_relative_to(Path(root).resolve()):
    raise SystemExit(f"kgviz was imported from {kgviz.__file__}, not from {root}")
from kgviz.providers.factory import make_embedder
texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
t0 = time.perf_counter()
emb, _ = make_embedder(spec, load_timeout_s=300, fallback=False)
load_s = time.perf_counter() - t0
emb.embed(texts[:2])  # warm-up: the session's first run allocates its buffers
load_start = os.getloadavg()[0]
t0, c0 = time.perf_counter(), time.process_time()
vectors = emb.embed(texts)
seconds, cpu_s = time.perf_counter() - t0, time.process_time() - c0
np.save(out, np.asarray(vectors, dtype=np.float32))
print(json.dumps({"load_s": round(load_s, 2), "embed_s": round(seconds, 2),
                  "passages_per_s": round(len(texts) / seconds, 1), "cpu_s": round(cpu_s, 2),
                  "passages_per_cpu_s": round(len(texts) / cpu_s, 1), "load_avg_start": round(load_start, 2),
                  "load_avg_end": round(os.getloadavg()[0], 2),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def _child_run(checkout: Path, spec: str, texts_file: Path, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(checkout), spec, str(texts_file), str(out)],
                          cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"embedding with {checkout} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def before_after(spec: str, texts: list[str], before: Path, rounds: int) -> dict:
    """CHECKOUT's code (before) and this checkout's (after) on the same texts, alternating."""
    sides = {"before": before.resolve(), "after": ROOT}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="kgviz_embed_ab_") as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        for r in range(rounds):
            for side, checkout in sides.items():
                fig = _child_run(checkout, spec, texts_file, Path(tmp) / f"{side}.npy")
                runs[side].append({"round": r + 1, **fig})
                print(f"  round {r + 1} {side}: {fig['passages_per_s']} passages/s, {fig['passages_per_cpu_s']} per CPU s "
                      f"(load {fig['load_avg_start']} -> {fig['load_avg_end']})", file=sys.stderr, flush=True)
        a, b = np.load(Path(tmp) / "before.npy"), np.load(Path(tmp) / "after.npy")
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    quietest = min(range(rounds), key=lambda r: max(runs["before"][r]["load_avg_start"],
                                                    runs["after"][r]["load_avg_start"]))
    return {"spec": spec, "passages": len(texts), "before": str(sides["before"]), "rounds": runs,
            "median_passages_per_s": {s: statistics.median(f["passages_per_s"] for f in runs[s]) for s in runs},
            "median_passages_per_cpu_s": {s: statistics.median(f["passages_per_cpu_s"] for f in runs[s]) for s in runs},
            "quietest_round": {s: runs[s][quietest] for s in runs},
            "min_cosine_before_after": round(float(cos.min()), 6), "rows_compared": int(len(cos))}


def side_by_side(specs: list[str], texts: list[str], rounds: int) -> dict:
    """Each spec on the same texts in a fresh child of this checkout, the specs alternating."""
    runs: dict[str, list[dict]] = {spec: [] for spec in specs}
    with tempfile.TemporaryDirectory(prefix="kgviz_embed_sbs_") as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        for r in range(rounds):
            for i, spec in enumerate(specs):
                fig = _child_run(ROOT, spec, texts_file, Path(tmp) / f"{i}.npy")
                runs[spec].append({"round": r + 1, **fig})
                print(f"  round {r + 1} {spec}: {fig['passages_per_s']} passages/s, {fig['passages_per_cpu_s']} per CPU s "
                      f"(load {fig['load_avg_start']} -> {fig['load_avg_end']})", file=sys.stderr, flush=True)
        vectors = [np.load(Path(tmp) / f"{i}.npy") for i in range(len(specs))]
    neural = [i for i, spec in enumerate(specs) if parse_embedder_spec(spec)[0] == "fastembed"]
    first = vectors[neural[0]] if neural else None
    cosines = {specs[i]: _row_cosines(first, vectors[i]) for i in neural if first is not None}
    return {"passages": len(texts), "rounds": runs,
            "median_passages_per_s": {s: statistics.median(f["passages_per_s"] for f in runs[s]) for s in specs},
            "median_passages_per_cpu_s": {s: statistics.median(f["passages_per_cpu_s"] for f in runs[s]) for s in specs},
            "cosine_vs_first_neural": {s: {"min": round(float(c.min()), 6), "mean": round(float(c.mean()), 6)}
                                       for s, c in cosines.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", action="append", help="an embedder spec (repeatable); not auto")
    ap.add_argument("--questions", type=int, default=100, help="first N questions (default 100)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a folder with corpus.jsonl and questions.jsonl")
    ap.add_argument("--passages", type=int, default=None, help="the first N passages only (default all)")
    ap.add_argument("--against", type=Path, help="another kgviz checkout: before -> after throughput per spec")
    ap.add_argument("--rounds", type=int, default=2, help="with --against or --throughput-passages: alternating "
                                                              "rounds (default 2)")
    ap.add_argument("--throughput-passages", type=int, default=None, metavar="N",
                    help="the specs side by side on the first N passages, each in fresh child processes")
    args = ap.parse_args()
    if args.against is not None and not (args.against / "kgviz" / "providers" / "embedders.py").is_file():
        ap.error(f"{args.against} is not a kgviz checkout")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    specs = args.embedder or ["hashing"]
    if not args.embedder and os.environ.get("KGVIZ_EMBEDDER_DIR"):
        specs.append(f"fastembed:{DIR_MODEL}@{os.environ['KGVIZ_EMBEDDER_DIR']}")
    if any(parse_embedder_spec(s)[0] == "auto" for s in specs):
        ap.error("name each embedder explicitly (auto depends on the machine)")
    if not (args.data / "corpus.jsonl").is_file():
        ap.error(f"{args.data} holds no corpus.jsonl (the shared data folder is needed)")
    corpus = _jsonl(args.data / "corpus.jsonl")[: args.passages]
    questions = _jsonl(args.data / "questions.jsonl")[: args.questions]
    doc: dict = {"data": str(args.data), "passages": len(corpus), "questions": len(questions), "k": TOP_K,
                 "cpus": os.cpu_count(), "load_avg_start": [round(x, 2) for x in os.getloadavg()]}
    if args.against is not None:
        texts = [f"{p['title']}. {p['text']}" for p in corpus]
        doc["before_after"] = [before_after(s, texts, args.against, args.rounds) for s in specs]
    if args.throughput_passages is not None:
        texts = [f"{p['title']}. {p['text']}" for p in corpus[: args.throughput_passages]]
        doc["side_by_side"] = side_by_side(specs, texts, args.rounds)
    reference: dict[str, np.ndarray] = {}
    doc["embedders"] = [measure(s, corpus, questions, reference) for s in specs]
    doc["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
