"""How kgviz grows with the corpus (issue 29): offline builds (pattern extraction, hashing
embedder) of 10k, 30k and 100k passages, measured per size, each size in its own process.

    nice -n 10 python benchmarks/scale.py                 # 10k, 30k, 100k
    nice -n 10 python benchmarks/scale.py --passages 10000 --json

Corpus: the union of ../shared/data's corpora (HotpotQA dev, 2Wiki dev, the HotpotQA and MuSiQue
train samples: real Wikipedia passages), deduplicated by text (6,220 distinct passages). Past
that, renamed copies: copy c rewrites every capitalised word of three letters or more (names,
places, titles — not a sentence-initial function word such as "The") by appending the syllable
RENAME_SUFFIXES[c] ("Halberg" -> "Halbergvan"), in the title too, so a copy is a distinct document
whose names make distinct entities, not a duplicate that the build skips or merges.

Per size: build wall time per stage and in total, the build's own peak RSS (``build_peak_rss_mb``:
the process's resident high-water mark reset as the first build begins and read as it returns, so
neither the corpus made before it nor the retrieval run after it is in it) and the whole process's
(``peak_rss_mb``: everything this size's process did, retrieval and the second build included),
database size on disk,
retrieval p50/p95 per method (offline retrieval, HotpotQA's first questions, after one warm-up),
``kgviz eval`` throughput (questions x methods per minute, offline answer and judge) and
identical_traces: a second build of the same corpus into another workspace gives the same
canonical trace (benchmarks/retrieval order, scores, ids; wall-clock fields left out) for every
method on those questions. Printed as a table with the time per passage from size to size, or
one JSON document (``--json``): {"sizes": [{"passages", "build_s", ...}], "load": ...}.

Not measured here (partial): the Explore/Trace pages' p95 in a browser.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("KGVIZ_DATA") or ROOT.parent / "shared" / "data")
CORPORA = ("hotpotqa", "2wikimultihopqa", "hotpotqa_hipporag_train", "musique_hipporag_train")
QUESTIONS = DATA / "hotpotqa" / "questions.jsonl"
SIZES = (10_000, 30_000, 100_000)
RENAME_SUFFIXES = ("", "van", "dor", "mil", "ask", "eth", "ung", "opa", "ril", "est", "ond", "iva", "urk", "ane",
                   "osk", "elt", "ira")
# sentence-initial words that are not names (left alone in a renamed copy)
_KEEP = {"The", "This", "That", "These", "Those", "There", "Then", "Their", "They", "She", "His", "Her", "Its",
         "And", "But", "For", "With", "From", "After", "Before", "During", "When", "While", "Where", "Which",
         "Who", "What", "Although", "However", "Since", "Other", "Some", "One", "Two", "Three", "All", "Many",
         "Most", "Both", "Each", "Also", "About", "Following", "According", "Under", "Over", "Between", "Into",
         "Until", "Unlike", "Like", "Among", "Around", "Born", "Despite", "Because", "Through", "Not", "Our"}
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
N_QUESTIONS = 20
EVAL_QUESTIONS = 5


def real_passages() -> list[dict[str, str]]:
    """The shared corpora's passages, each distinct text once, in corpus order."""
    seen: set[str] = set()
    out = []
    for name in CORPORA:
        with (DATA / name / "corpus.jsonl").open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                row = json.loads(line)
                key = " ".join(str(row["text"]).split())
                if key and key not in seen:
                    seen.add(key)
                    out.append({"title": str(row.get("title") or ""), "text": str(row["text"])})
    return out


def renamed(text: str, copy: int) -> str:
    suffix = RENAME_SUFFIXES[copy]
    return _CAPITALISED.sub(lambda m: m.group(0) if m.group(0) in _KEEP else m.group(0) + suffix, text)


def corpus(n: int) -> list[dict[str, str]]:
    """``n`` passages: the real ones, then renamed copies (module docstring)."""
    real = real_passages()
    if n > len(real) * len(RENAME_SUFFIXES):
        raise SystemExit(f"{n} passages need more than {len(RENAME_SUFFIXES)} copies of {len(real)}")
    out = []
    for i in range(n):
        copy, row = divmod(i, len(real))
        p = real[row]
        out.append({"title": renamed(p["title"], copy), "text": renamed(p["text"], copy)})
    return out


def _hwm_mb() -> float | None:
    """This process's resident high-water mark (VmHWM), in MB; None where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _reset_hwm() -> bool:
    """VmHWM := VmRSS (Linux >= 4.0: "5" to /proc/self/clear_refs); whether it was reset."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


class PeakWindow:
    """The resident high-water mark of one span of this process (``own_mb``) and of the whole
    process (``process_mb()``), from one counter. Entering resets the kernel's counter, after
    keeping the peak reached before; leaving reads it, which is then the span's own peak. Where
    the counter cannot be reset, the span's peak is known only when it rose past the earlier one
    (else ``own_mb`` stays None). getrusage's ru_maxrss is no measure after a reset (it follows
    the reset counter), so the process peak is the larger of the peak kept before the reset and
    the counter's and ru_maxrss's now."""

    def __init__(self) -> None:
        self.before_mb: float = 0.0  # the process's peak before the span
        self.own_mb: float | None = None
        self.seen_mb: float = 0.0  # peaks read inside the span by whoever reset the counter again (StagePeaks)

    @contextmanager
    def span(self) -> Iterator["PeakWindow"]:
        self.before_mb = max(_hwm_mb() or 0.0, _ru_maxrss_mb())
        reset = _reset_hwm()
        try:
            yield self
        finally:
            now = _hwm_mb()
            if now is not None and (reset or now > self.before_mb):
                self.own_mb = max(now, self.seen_mb)

    def process_mb(self) -> float:
        return max(self.before_mb, self.seen_mb, _hwm_mb() or 0.0, _ru_maxrss_mb())


class StagePeaks:
    """The build process's resident high-water mark per build stage (``by_stage``), from the same
    kernel counter as ``PeakWindow``: as each stage begins (the build records it in the workspace,
    ``kgviz.index.steps.mark_build_stage``, which ``watching`` wraps) the counter is read (the peak
    of the stage that ended) and reset. Only inside a ``PeakWindow`` span, which reset the counter
    as the build began; worker processes are not in it. Empty where the counter cannot be reset."""

    def __init__(self, window: PeakWindow) -> None:
        self.window = window  # told every peak read, since each reset hides it from the window
        self.by_stage: dict[str, float] = {}
        self._stage: str | None = None

    def begin(self, stage: str) -> None:
        self.close()
        self._stage = stage if _reset_hwm() else None

    @contextmanager
    def watching(self) -> Iterator["StagePeaks"]:
        """While inside, each stage a build begins in this process is a new span."""
        from kgviz.index import steps

        real = steps.mark_build_stage

        def mark(store: Any, name: str) -> None:
            self.begin(name)
            real(store, name)

        steps.mark_build_stage = mark
        try:
            yield self
        finally:
            steps.mark_build_stage = real
            self.close()

    def close(self) -> None:
        """Read the peak of the stage under way (a build's last stage ends with the build)."""
        now = _hwm_mb()
        if self._stage is not None and now is not None:
            self.by_stage[self._stage] = max(now, self.by_stage.get(self._stage, 0.0))
            self.window.seen_mb = max(self.window.seen_mb, now)
        self._stage = None


def _ru_maxrss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _dir_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def _canonical(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _canonical(v) for k, v in sorted(obj.items()) if k not in ("seconds", "retrieval_seconds", "latency_s")}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    return round(obj, 7) if isinstance(obj, float) else obj


def _build(corpus_file: Path, db: Path) -> tuple[Any, Any, float]:
    from kgviz.graph.store import GraphStore
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.ingest import load_paths
    from kgviz.methods.base import MethodContext
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    emb = HashingEmbedder()
    # the corpus is one .jsonl file, over the loaders' per-file limit from ~35k passages on (100k:
    # ~60 MB); a corpus that does not load whole is an error here, never a build of what loaded
    loaded = load_paths([corpus_file], max_bytes=corpus_file.stat().st_size + 1)
    if loaded.errors or not loaded.documents:
        raise SystemExit(f"the scale corpus {corpus_file} did not load: "
                         + ("; ".join(str(e) for e in loaded.errors[:3]) or "no documents"))
    docs = loaded.documents
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    t0 = time.perf_counter()
    report = build(docs, store, Reasoner(OfflineLLM(), emb), BuildParams())
    return MethodContext(store, Reasoner(OfflineLLM(), emb)), report, time.perf_counter() - t0


def _traces(ctx: Any, questions: list[str]) -> dict[str, Any]:
    from kgviz.methods.registry import list_methods
    from kgviz.run import run_method

    return {f"{m} | {q}": _canonical(run_method(m, q, ctx).to_dict()) for q in questions for m in list_methods()}


def _eval_rate(db: Path, work: Path) -> dict[str, Any]:
    """``kgviz eval`` on EVAL_QUESTIONS questions x every method, offline: runs per minute."""
    from kgviz.methods.registry import list_methods

    cmd = [sys.executable, "-c", "from kgviz.cli import main; raise SystemExit(main())", "eval", str(QUESTIONS),
           "--db", str(db), "--llm", "offline", "--limit", str(EVAL_QUESTIONS), "--out", str(work / "eval"),
           "--n-boot", "200", "--workers", "2", "--json"]
    env = {**os.environ, "KGVIZ_HOME": str(work / "home"), "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    runs = EVAL_QUESTIONS * len(list_methods())
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-400:], "seconds": round(seconds, 1)}
    return {"runs": runs, "seconds": round(seconds, 1), "runs_per_min": round(60 * runs / seconds, 1)}


def _partial(row: dict[str, Any]) -> None:
    """What is measured so far, on stderr (one JSON line per phase): a run stopped part way still
    leaves its figures."""
    print(json.dumps({"partial": row}), file=sys.stderr, flush=True)


def measure_one(n: int, twin: bool, with_eval: bool = True, dump: str | None = None,
                keep: str | None = None) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from retrieval_latency import measure  # noqa: E402  (benchmarks/retrieval_latency.py)

    from kgviz.methods.registry import list_methods

    if keep:  # the corpus and the first build stay in KEEP/<n> (to measure or profile that graph later)
        work = Path(keep) / str(n)
        if work.exists():
            raise SystemExit(f"{work} exists: --keep never overwrites a kept build")
        work.mkdir(parents=True)
    else:
        work = Path(tempfile.mkdtemp(prefix=f"kgviz_scale_{n}_"))
    try:
        corpus_file = work / "corpus.jsonl"
        rows = corpus(n)
        corpus_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        questions = [json.loads(line)["question"] for line in QUESTIONS.read_text("utf-8").splitlines()
                     if line.strip()][:N_QUESTIONS]
        peak = PeakWindow()
        stages = StagePeaks(peak)
        with peak.span(), stages.watching():  # the build's own peak, apart from the retrieval run after it
            ctx, report, build_s = _build(corpus_file, work / "a")
        row: dict[str, Any] = {
            "passages": n, "copies": -(-n // len(real_passages())) - 1,
            "build_s": round(build_s, 1),
            "stage_s": {k: round(v, 1) for k, v in report.seconds_by_stage.items()},
            "counts": {k: v for k, v in report.counts.items() if k in ("Document", "Chunk", "Entity", "Triple")},
        }
        row["db_mb"] = _dir_mb(work / "a")
        row["build_peak_rss_mb"] = peak.own_mb
        row["stage_peak_rss_mb"] = stages.by_stage  # the build process's own, per stage
        row["peak_rss_mb"] = peak.process_mb()
        _partial(row)
        lat = measure(ctx, questions, list_methods())
        row["retrieval_p50_ms"] = {m: r.get("p50_ms") for m, r in lat.items()}
        row["retrieval_p95_ms"] = {m: r.get("p95_ms") for m, r in lat.items()}
        row["retrieval_errors"] = {m: r["first_error"] for m, r in lat.items() if r.get("errors")}
        _partial(row)
        traces = _traces(ctx, questions[:5]) if twin or dump else None
        if dump:  # to compare two checkouts' graphs: the same canonical traces (benchmarks/scale.py --dump-traces)
            Path(dump).mkdir(parents=True, exist_ok=True)
            (Path(dump) / f"traces_{n}.json").write_text(json.dumps(traces, sort_keys=True, indent=1), "utf-8")
        ctx.store.close()
        if with_eval:
            row["eval"] = _eval_rate(work / "a", work)
            _partial(row)
        if twin:
            ctx2, _, build2_s = _build(corpus_file, work / "b")
            row["build2_s"] = round(build2_s, 1)
            other = _traces(ctx2, questions[:5])
            ctx2.store.close()
            row["identical_traces"] = traces == other
            row["traces_compared"] = len(traces)
        row["peak_rss_mb"] = peak.process_mb()  # the whole process: retrieval and the second build too
        return row
    finally:
        if keep:
            shutil.rmtree(work / "b", ignore_errors=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _table(sizes: list[dict[str, Any]]) -> str:
    lines = [f"{'passages':>9} {'build s':>8} {'ms/passage':>10} {'growth':>7} {'build peak MB':>13} "
             f"{'peak MB':>8} {'db MB':>7} "
             f"{'worst p50':>22} {'eval runs/min':>13} {'identical':>9}"]
    prev = None
    for r in sizes:
        per = 1000 * r["build_s"] / r["passages"]
        growth = f"{per / prev:.2f}x" if prev else "-"
        prev = per
        p50 = {m: v for m, v in r["retrieval_p50_ms"].items() if v is not None}
        worst = max(p50, key=p50.get) if p50 else "-"
        worst_txt = f"{worst} {p50[worst]:.0f} ms" if p50 else "-"
        build_peak = r.get("build_peak_rss_mb")
        build_peak_txt = f"{build_peak:.0f}" if build_peak is not None else "-"
        lines.append(f"{r['passages']:>9,} {r['build_s']:>8.1f} {per:>10.2f} {growth:>7} {build_peak_txt:>13} "
                     f"{r['peak_rss_mb']:>8.0f} "
                     f"{r['db_mb']:>7.0f} {worst_txt:>22} {r.get('eval', {}).get('runs_per_min', '-')!s:>13} "
                     f"{r.get('identical_traces', '-')!s:>9}")
        lines.append("          stages: " + ", ".join(f"{k} {v:.1f}" for k, v in r["stage_s"].items()))
        lines.append("          p50/p95 ms: " + ", ".join(f"{m} {r['retrieval_p50_ms'][m]}/{r['retrieval_p95_ms'][m]}"
                                                          for m in r["retrieval_p50_ms"]))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, action="append", help="a size (repeatable; default 10k, 30k, 100k)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--no-twin", action="store_true", help="skip the second build (identical_traces not measured)")
    ap.add_argument("--no-eval", action="store_true", help="skip the kgviz eval throughput (not measured)")
    ap.add_argument("--dump-traces", metavar="DIR", help="write each size's canonical traces (5 questions x every "
                    "method) to DIR/traces_<n>.json, to compare the graphs two checkouts build")
    ap.add_argument("--keep", metavar="DIR", help="keep each size's corpus and first build in DIR/<passages>/ "
                    "(corpus.jsonl, a/ = the workspace's database) instead of removing them")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child process measuring one size
    args = ap.parse_args()
    if not (DATA / CORPORA[0] / "corpus.jsonl").exists():
        raise SystemExit(f"the shared corpora are not at {DATA} (set KGVIZ_DATA)")
    if args.one:
        print(json.dumps(measure_one(args.one, not args.no_twin, not args.no_eval, args.dump_traces, args.keep)))
        return 0
    sizes = []
    for n in args.passages or SIZES:
        cmd = [sys.executable, __file__, "--one", str(n)] + (["--no-twin"] if args.no_twin else []) \
            + (["--no-eval"] if args.no_eval else []) + (["--dump-traces", args.dump_traces] if args.dump_traces else []) \
            + (["--keep", args.keep] if args.keep else [])
        load_before = os.getloadavg()
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        if out.returncode != 0:  # kept as a failed size: the sizes measured before it are not lost
            print(f"size {n} failed (exit status {out.returncode}; its stderr is above)", file=sys.stderr)
            sizes.append({"passages": n, "error": f"exit status {out.returncode}"})
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["load_avg_1m"] = [round(load_before[0], 1), round(os.getloadavg()[0], 1)]  # before, after
        sizes.append(row)
        if not args.json:
            print(f"... {n:,} passages measured (load {row['load_avg_1m'][0]} -> {row['load_avg_1m'][1]})",
                  file=sys.stderr)
    doc = {"sizes": sizes, "cores": os.cpu_count(), "mode": "offline, hashing embedder",
           "real_passages": len(real_passages())}
    print(json.dumps(doc, indent=2) if args.json else _table([r for r in sizes if "error" not in r]))
    return 3 if any("error" in r for r in sizes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
