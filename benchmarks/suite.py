"""The benchmark suite behind `kgviz bench` and benchmarks/run.py (a script of the checkout, not
library code: kgviz/evaluate/bench.py only finds and loads it): one JSON document of figures,
each with its target and whether it was met.

Figures and where they come from:

* build        – benchmarks/build_hotpotqa.py in a subprocess (so peak RSS is the build's own):
                 offline build of ../shared/data/hotpotqa/corpus.jsonl, seconds per stage and peak
                 RSS; target < 60 s and < 2 GB (the build issue's target).
* bulk_vs_rows – benchmarks/bulk_vs_rows.py in a subprocess: bulk COPY vs per-row CREATE; target
                 ratio >= 50 (that script's threshold).
* retrieval    – benchmarks/retrieval_latency.py in a subprocess on the graph the build kept
                 (full mode; quick mode uses the tests' small fixture graph):
                 p50/p95 per method, answer step excluded; target p50 <= 100 ms for every
                 method (the method issues' target); each method row says whether it meets it.
* extraction   – the pipeline with a fake LLM (not offline, 200 ms per call, one fixed triple) on
                 ~40 chunks with 1 and N workers; target speed-up >= 0.8·N.
* cached rerun – the same build twice through CachedLLM into fresh databases; target: the second
                 build spends 0 tokens.
* ket          – KET skeleton extraction tokens ÷ full-KG extraction tokens for several β, on the
                 kept graph's chunks (kgviz.index.ket.plan_core + skeleton_cost); target (KET-RAG §5.3:
                 the skeleton costs about β of the full KG) ratio <= β + 0.05. Then the KET index
                 is added to that graph (build_ket_index, as benchmarks/ket_index.py does), so the
                 retrieval figure times ket-rag and keyword-rag too.
* pyvis        – kgviz.viz.graph_html on a 500-node, 1,000-edge graph; target <= 1 s.

``quick`` shrinks every size so a test can run the whole suite in seconds; its timings mean
nothing, only the shape of the JSON does.
"""
from __future__ import annotations

import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from kgviz.errors import KgvizError
from kgviz.providers.scripted import ScriptedLLM

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DATA = ROOT.parent / "shared" / "data"
HOTPOT = DATA / "hotpotqa" / "corpus.jsonl"
SAMPLE = ROOT / "sample_data" / "corpus.jsonl"
FAKE_TRIPLE = "(Orrin Bridge [work]; crosses; River Vell [place])"
SUBPROCESS_TIMEOUT_S = 1800

Log = Callable[[str], None]


def slow_fake_llm(delay_s: float) -> ScriptedLLM:
    """A provider stand-in: not offline, sleeps ``delay_s`` per call, always returns one triple
    (kgviz.providers.scripted, the same fake the index tests use)."""
    return ScriptedLLM(lambda prompt: FAKE_TRIPLE, delay_s=delay_s, model="slow-fake-1")


def _figure(value: dict[str, Any], target: str, met: bool) -> dict[str, Any]:
    return {**value, "target": target, "met": bool(met)}


def _unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason, "met": None}


def _script(name: str, args: list[str], log: Log | None) -> dict[str, Any]:
    """Run benchmarks/<name> and parse the JSON it prints (last JSON object on stdout)."""
    path = BENCH_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (run from a source checkout)")
    if log:
        log(f"bench: {name} {' '.join(args)}")
    proc = subprocess.run([sys.executable, str(path), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT_S)
    out = proc.stdout
    start = out.find("{")
    if start < 0:
        raise RuntimeError(f"{name} printed no JSON (exit {proc.returncode}): {proc.stderr[-800:]}")
    return json.loads(out[start:])


# --- figures -------------------------------------------------------------------------------------
def bench_build(quick: bool, keep: Path, log: Log | None) -> dict[str, Any]:
    corpus = HOTPOT if HOTPOT.is_file() else SAMPLE
    args = ["--corpus", str(corpus), "--keep", str(keep)] + (["--limit", "40"] if quick else [])
    r = _script("build_hotpotqa.py", args, log)
    value = {"corpus": str(corpus), "documents": r.get("documents"), "seconds_by_stage": r.get("seconds_by_stage"),
             "build_seconds": r.get("build_seconds"), "peak_rss_mb": r.get("peak_rss_mb"),
             "counts": r.get("counts")}
    met = (r.get("build_seconds") or 1e9) < 60 and (r.get("peak_rss_mb") or 1e9) < 2048
    return _figure(value, "build < 60 s and peak RSS < 2048 MB (full HotpotQA corpus, offline)", met)


def bench_bulk(quick: bool, log: Log | None) -> dict[str, Any]:
    sizes = ["--rows", "1000", "--sample", "50", "--min-speedup", "0"] if quick else []
    r = _script("bulk_vs_rows.py", sizes, log)
    emb, text = r.get("with_embeddings", {}), r.get("text_only", {})
    ratio = emb.get("speedup_bulk_vs_per_row")
    value = {"rows": emb.get("rows"), "ratio_with_embeddings": ratio,
             "ratio_text_only": text.get("speedup_bulk_vs_per_row"),
             "bulk_rows_per_s": emb.get("bulk_copy", {}).get("rows_per_s"),
             "per_row_rows_per_s": emb.get("per_row_create", {}).get("rows_per_s")}
    return _figure(value, "bulk COPY >= 50x faster than per-row CREATE", (ratio or 0) >= 50)


P50_TARGET_MS = 100


def bench_retrieval(quick: bool, db: Path, log: Log | None) -> dict[str, Any]:
    if quick or not HOTPOT.is_file():
        args = ["--corpus", "fixture", "--n", "5"]
    else:
        args = ["--corpus", "hotpotqa", "--db", str(db), "--n", "50"]
    r = _script("retrieval_latency.py", args, log)
    methods = {m: {k: v for k, v in row.items() if k in ("p50_ms", "p95_ms", "n", "errors", "first_error")}
               for m, row in r.get("methods", {}).items()}
    timed = {m: row for m, row in methods.items() if row.get("n")}
    # a method that cannot run on this graph (e.g. KET-RAG without a KET index) has no latency to
    # judge: it is listed, with its error, and left out of "met"
    failed = sorted(set(methods) - set(timed))
    for row in timed.values():
        row["p50_met"] = row["p50_ms"] <= P50_TARGET_MS
    met = bool(timed) and all(row["p50_met"] for row in timed.values())
    return _figure({"corpus": r.get("corpus"), "n_questions": r.get("n_questions"), "methods": methods,
                    "not_timed": failed}, f"p50 <= {P50_TARGET_MS} ms for every method that runs (retrieval only, offline)", met)


def _fake_docs(n: int) -> list[Any]:
    from kgviz.ingest import document_from_text

    rng = random.Random(7)
    words = "bridge river town mill harbour school tower market canal station museum library".split()
    docs = []
    for i in range(n):  # one short document = one chunk
        body = " ".join(f"The {rng.choice(words)} of Place{i} was built in {1800 + i}." for _ in range(4))
        docs.append(document_from_text(body, title=f"Doc {i}", source=f"bench-{i}.txt"))
    return docs


def _build_once(docs: list[Any], llm: Any, workers: int, tmp: Path, name: str) -> Any:
    from kgviz.graph.store import GraphStore
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.reasoning import Reasoner

    emb = HashingEmbedder()
    store = GraphStore.open(tmp / name, embedder_id=emb.id, dim=emb.dim)
    try:
        return build(docs, store, Reasoner(llm, emb), BuildParams(workers=workers))
    finally:
        store.close()


def bench_extraction(quick: bool, tmp: Path, workers: int = 4) -> dict[str, Any]:
    n, delay = (8, 0.05) if quick else (40, 0.2)
    docs = _fake_docs(n)
    seconds = {}
    for w in (1, workers):
        report = _build_once(docs, slow_fake_llm(delay), w, tmp, f"extract-w{w}")
        seconds[w] = report.seconds_by_stage.get("extract", 0.0)
        chunks = report.extracted_chunks
    speedup = seconds[1] / seconds[workers] if seconds[workers] else 0.0
    value = {"chunks": chunks, "llm_latency_s": delay, "workers": workers,
             "extract_seconds": {str(k): round(v, 3) for k, v in seconds.items()}, "speedup": round(speedup, 2)}
    return _figure(value, f"speed-up >= {0.8 * workers:.1f} (0.8 x {workers} workers)", speedup >= 0.8 * workers)


def bench_cached_rerun(quick: bool, tmp: Path) -> dict[str, Any]:
    from kgviz.providers.cache import CachedLLM, CompletionCache

    docs = _fake_docs(8 if quick else 40)
    fake = slow_fake_llm(0.0)
    cache = CompletionCache(tmp / "cache" / "llm_cache.sqlite3")
    try:
        llm = CachedLLM(fake, cache)
        first = _build_once(docs, llm, 4, tmp, "cached-1").usage
        calls_before = fake.calls
        second = _build_once(docs, llm, 4, tmp, "cached-2").usage  # a fresh database, same calls
    finally:
        cache.close()
    value = {"first_tokens": first.total_tokens, "second_tokens": second.total_tokens,
             "second_provider_calls": fake.calls - calls_before, "second_cached_calls": second.cached_calls}
    return _figure(value, "0 tokens on the cached re-run", second.total_tokens == 0 and fake.calls == calls_before)


def bench_ket(db: Path, betas: Sequence[float] = (0.2, 0.4, 0.6, 0.8, 1.0)) -> dict[str, Any]:
    """The skeleton/full token ratios on the kept graph's chunks; then the KET index is added to
    that graph (KNN, PageRank, sub-chunks, keywords) so the retrieval figure can time KET-RAG."""
    try:
        from kgviz.index.ket import KetParams, build_ket_index, n_core, plan_core, skeleton_cost, stored_chunks
    except ImportError as exc:
        return _unavailable(f"kgviz.index.ket is not available: {exc}")
    from kgviz.graph.store import GraphStore
    from kgviz.index.params import BuildParams
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.text import count_tokens

    emb = HashingEmbedder()
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    try:
        ids, _docs, texts, vecs = stored_chunks(store)
        plan = plan_core(ids, texts, vecs, KetParams(beta=1.0))  # the ranking does not depend on β
        chunks = [(i, t, count_tokens(t)) for i, t in zip(ids, texts)]
        ratio_of: dict[str, float] = {}
        for beta in betas:
            core = set(plan.ranking[: n_core(len(plan.ranking), beta)])
            cost = skeleton_cost(chunks, core, beta, expected_output_ratio=BuildParams().expected_output_ratio)
            ratio_of[f"{beta:.1f}"] = round(cost.skeleton_estimate_tokens / max(1, cost.full_estimate_tokens), 3)
        t0 = time.perf_counter()
        build_ket_index(store, emb, KetParams(), chunk_tokens=BuildParams().chunk_tokens, force=True)
        index_s = time.perf_counter() - t0
    finally:
        store.close()
    met = all(r <= float(b) + 0.05 for b, r in ratio_of.items())
    return _figure({"chunks": len(ids), "ratio_by_beta": ratio_of, "tokens": "estimated extraction tokens "
                    "(prompt + expected reply) of core chunks ÷ of every chunk",
                    "ket_index_seconds": round(index_s, 2)},
                   "skeleton/full token ratio <= β + 0.05 (KET-RAG §5.3)", met)


def bench_pyvis(nodes: int = 500, edges: int = 1000, repeats: int = 3) -> dict[str, Any]:
    from kgviz.viz.graph_html import VizEdge, VizNode, graph_html

    rng = random.Random(3)
    ns = [VizNode(f"e{i}", f"Entity number {i}", title=f"entity {i}") for i in range(nodes)]
    es = [VizEdge(f"e{rng.randrange(nodes)}", f"e{rng.randrange(nodes)}", label="related to") for _ in range(edges)]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        graph_html(ns, es)
        times.append(time.perf_counter() - t0)
    sec = statistics.median(times)
    return _figure({"nodes": nodes, "edges": edges, "seconds_median": round(sec, 3),
                    "seconds_max": round(max(times), 3)}, "<= 1 s for 500 nodes", sec <= 1.0)


# --- the suite -----------------------------------------------------------------------------------
def _guard(name: str, fn: Callable[[], dict[str, Any]], log: Log | None) -> dict[str, Any]:
    """A benchmark that cannot run is reported as such (with the reason) instead of stopping the
    suite: the other figures are still worth having."""
    if log:
        log(f"bench: {name}…")
    t0 = time.perf_counter()
    try:
        out = fn()
    except (KgvizError, FileNotFoundError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
        out = _unavailable(f"{type(exc).__name__}: {exc}")
    out["bench_seconds"] = round(time.perf_counter() - t0, 2)
    return out


def run_bench(*, quick: bool = False, log: Log | None = None) -> dict[str, Any]:
    """Run every benchmark; see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="kgviz_bench_") as tmp_s:
        tmp = Path(tmp_s)
        db = tmp / "build"
        figures: dict[str, Any] = {}
        figures["build"] = _guard("build", lambda: bench_build(quick, db, log), log)
        figures["bulk_vs_rows"] = _guard("bulk_vs_rows", lambda: bench_bulk(quick, log), log)
        if db.exists():  # before retrieval: it adds the KET index that ket-rag needs
            figures["ket_skeleton_ratio"] = _guard("ket_skeleton_ratio", lambda: bench_ket(db), log)
        else:
            figures["ket_skeleton_ratio"] = _unavailable("no kept build to read chunks from")
        figures["retrieval_latency"] = _guard("retrieval_latency", lambda: bench_retrieval(quick, db, log), log)
        figures["extraction_speedup"] = _guard("extraction_speedup", lambda: bench_extraction(quick, tmp), log)
        figures["cached_rerun_tokens"] = _guard("cached_rerun_tokens", lambda: bench_cached_rerun(quick, tmp), log)
        figures["pyvis_render"] = _guard("pyvis_render", lambda: bench_pyvis(nodes=500), log)
    met = [f.get("met") for f in figures.values()]
    return {
        "quick": quick,
        "note": "quick mode: small sizes, timings not meaningful" if quick else "",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "figures": figures,
        "all_met": all(m is True for m in met),
        "met": sum(m is True for m in met), "not_met": sum(m is False for m in met),
        "unavailable": sum(m is None for m in met),
    }


def format_bench(report: dict[str, Any]) -> str:
    lines = [f"kgviz bench{' (quick)' if report['quick'] else ''}: {report['met']} met, {report['not_met']} not met, "
             f"{report['unavailable']} unavailable"]
    for name, f in report["figures"].items():
        status = {True: "MET", False: "NOT MET", None: "n/a"}[f.get("met")]
        detail = f.get("reason") or f.get("target", "")
        lines.append(f"  {name:<22} {status:<8} {detail}")
    return "\n".join(lines)
