"""Where an offline build's memory goes (issue 29): per-stage resident-memory high-water marks.

    nice -n 10 python benchmarks/build_memory.py --passages 10000
    nice -n 10 python benchmarks/build_memory.py --passages 10000 --tracemalloc   # + Python heap per stage
    KGVIZ_BUFFER_POOL_MB=512 python benchmarks/build_memory.py --passages 10000   # Kùzu's share
    nice -n 10 python benchmarks/build_memory.py --passages 10000 --trim   # freed-but-kept C heap per stage

The corpus is benchmarks/scale.py's (the shared corpora's real passages, then renamed copies) and
the build is scale.py's (pattern extraction, hashing embedder, default BuildParams), in this
process. Each pipeline stage is wrapped: on entry the kernel's peak-RSS counter is reset
(``/proc/self/clear_refs`` = 5), on exit VmHWM is that stage's own peak, with VmRSS and its
anonymous / file-mapped split (Kùzu's buffer pool is anonymous memory; memory-mapped vector files
are file pages). The write stage's steps (each node COPY, each edge table) are labelled the
same way, so a peak inside it is named. With ``--tracemalloc`` the Python allocations (current
and peak, top lines) are recorded per stage too; that slows the build about twofold, so its
seconds are not the build's. Every stage also records, on entry and exit (``native_in`` /
``native_out``), who holds the anonymous memory: Kùzu's buffer-manager regions (told apart in
/proc/self/smaps by their size), the brk heap, the other anonymous mappings (glibc's thread
arenas, Python's arenas, Arrow's pool), glibc's own count of bytes in use / free but kept
(mallinfo2) and Arrow's allocated bytes. ``--trim`` (an experiment: it changes what later stages
find) hands the free C-heap pages back as each stage begins and records how much that was.
``KGVIZ_DUMP_SMAPS=<stage>`` copies /proc/self/smaps and ``sys._debugmallocstats()`` (Python's
small-object arenas) to /tmp as that stage begins.

Measured (10k passages, offline, 2 GB pool; 2026-11-26): the peak is the write stage's Triple
node COPY (2.7 GB), then the ket stage's Keyword COPY (2.2-2.3 GB) and the index stage (2.2 GB). A
node COPY of a table with a 768-d vector column adds 0.7-1.1 GB inside Kùzu whatever its row count
(131,072 or 65,536 rows; 0.45-0.5 GB with the vector column all null): Kùzu fills a whole node
group in memory before writing it, so smaller batches do not lower it (and leave part-filled node
groups). Beside it the batch's Arrow table (~0.45 GB at 131,072 rows) and the resolved rows held in
Python (~0.2-0.3 GB at 10k, growing with the corpus: entities ~1.2 KB each, about half). A 1 GB
pool (KGVIZ_BUFFER_POOL_MB=1024) gave the same peak at 10k: the pool was not full there. At 30k
the peak moves to the ket stage's Keyword node COPY (3.2 -> 4.9 GB inside one COPY) and the index
stage (4.7 GB); the keyword layer loads BuildParams.write_batch_rows rows per COPY, so raising that
from 50,000 to 131,072 (for the write stage) also grew the Keyword COPYs' Arrow batches.

Prints one JSON document: {"passages", "pool_mb", "build_s", "peak_rss_mb", "stages": [{"stage",
"seconds", "rss_in_mb", "rss_out_mb", "peak_mb", "anon_out_mb", "file_out_mb", ...}],
"write_steps": [...]}. Reset counters make ru_maxrss useless here, so "peak_rss_mb" is the
highest stage peak.
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def status_mb() -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon and RssFile of this process, in MB."""
    out = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def native_mb(pool_bytes: int) -> dict[str, float]:
    """Who holds the anonymous resident memory, in MB: Kùzu's buffer manager (its memory regions
    are anonymous mappings reserved at the pool's size and at the database's maximum size, so
    they are told apart by size), glibc's heaps (mallinfo2: bytes in use, bytes free but kept,
    and mmapped blocks), Arrow's memory pool (bytes allocated) and the rest of the anonymous
    mappings (glibc's heaps' resident pages among them)."""
    import pyarrow as pa

    kuzu = anon = heap = 0
    size = rss = 0
    name = ""

    def close() -> None:
        nonlocal kuzu, anon, heap
        if name == "[heap]":
            heap += rss
        elif not name or name.startswith("[anon"):
            if size >= pool_bytes >> 10:  # kB: a region of Kùzu's buffer manager
                kuzu += rss
            else:
                anon += rss

    with open("/proc/self/smaps", encoding="ascii", errors="replace") as f:
        for line in f:
            head = line.split()
            if not head:
                continue
            if "-" in head[0] and not head[0].endswith(":"):  # a mapping's header line
                close()
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                size, rss, name = (hi - lo) >> 10, 0, " ".join(head[5:])
            elif head[0] == "Rss:":
                rss = int(head[1])
        close()
    out = {"kuzu_regions_mb": kuzu / 1024, "brk_heap_mb": heap / 1024, "other_anon_mb": anon / 1024,
           "arrow_allocated_mb": pa.total_allocated_bytes() / 2**20}
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if hasattr(libc, "mallinfo2"):
        libc.mallinfo2.restype = _Mallinfo2
        m = libc.mallinfo2()
        out.update(glibc_in_use_mb=m.uordblks / 2**20, glibc_free_kept_mb=m.fordblks / 2**20,
                   glibc_mmapped_mb=m.hblkhd / 2**20)
    return {k: round(v, 1) for k, v in out.items()}


def _cpu_s() -> float:
    """User + system CPU seconds of this process, every thread (Kùzu's and numpy's too; not the
    extraction and embedding worker processes): less noisy than wall seconds on a shared machine."""
    t = os.times()
    return t.user + t.system


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # VmHWM := VmRSS (Linux >= 4.0)


class Recorder:
    def __init__(self, trace: bool, pool_bytes: int = 0, trim: bool = False) -> None:
        self.trace = trace
        self.trim = trim
        self.pool_bytes = pool_bytes
        self.stages: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self._open: list[float] = []  # the running peak of each span entered and not left

    @contextmanager
    def span(self, into: list[dict[str, Any]], label: str) -> Iterator[None]:
        before = status_mb()
        native_in = native_mb(self.pool_bytes) if self.pool_bytes and into is self.stages else None
        if self.trim and into is self.stages:  # --trim: what the C heaps hold freed as the stage begins
            from kgviz.index import memory

            memory.give_back(arrow=True)
            trimmed = status_mb()
            before["trim_freed_mb"] = round(before["VmRSS"] - trimmed["VmRSS"], 1)
            before["VmRSS"] = trimmed["VmRSS"]
        if os.environ.get("KGVIZ_DUMP_SMAPS") == label:  # debugging: the mappings as a stage begins
            with open("/proc/self/smaps", encoding="ascii", errors="replace") as src:
                Path(f"/tmp/smaps_{label}_{os.getpid()}.txt").write_text(src.read(), "ascii")
            saved = os.dup(2)  # and Python's small-object allocator's arenas (it prints to fd 2)
            with open(f"/tmp/pymalloc_{label}_{os.getpid()}.txt", "w", encoding="ascii") as out:
                os.dup2(out.fileno(), 2)
                try:
                    sys._debugmallocstats()
                finally:
                    os.dup2(saved, 2)
                    os.close(saved)
        if self._open:  # the enclosing span's peak so far, before the counter is reset
            self._open[-1] = max(self._open[-1], before["VmHWM"])
        self._open.append(0.0)
        reset_peak()
        if self.trace and into is self.stages:
            tracemalloc.reset_peak()
        t0, cpu0 = time.perf_counter(), _cpu_s()
        try:
            yield
        finally:
            after = status_mb()
            peak = max(self._open.pop(), after["VmHWM"])
            if self._open:  # reset counters: the enclosing span must still see this one's peak
                self._open[-1] = max(self._open[-1], peak)
            row: dict[str, Any] = {
                "stage": label, "seconds": round(time.perf_counter() - t0, 2),
                "cpu_s": round(_cpu_s() - cpu0, 2), "rss_in_mb": before["VmRSS"],
                "rss_out_mb": after["VmRSS"], "peak_mb": peak, "anon_out_mb": after["RssAnon"],
                "file_out_mb": after["RssFile"],
            }
            if self.trace:
                py_now, py_peak = tracemalloc.get_traced_memory()
                row["py_current_mb"] = round(py_now / 2**20, 1)
                row["py_peak_mb"] = round(py_peak / 2**20, 1)  # since the stage began
            if self.trace and into is self.stages:  # a snapshot walks every block: per stage only
                top = tracemalloc.take_snapshot().statistics("lineno")[:6]
                row["py_top"] = [f"{s.size / 2**20:.1f} MB {s.traceback[0].filename.split('kgviz/')[-1]}:"
                                 f"{s.traceback[0].lineno}" for s in top]
            if "trim_freed_mb" in before:
                row["trim_freed_in_mb"] = before["trim_freed_mb"]
            if native_in is not None:  # what the anonymous memory is, on the way in and out
                row["native_in"], row["native_out"] = native_in, native_mb(self.pool_bytes)
            into.append(row)


def instrument(rec: Recorder) -> None:
    """Wrap the pipeline's stages and the store's bulk loads (this process only)."""
    from kgviz.graph.store import GraphStore
    from kgviz.index import pipeline

    original_stage = pipeline._Run.stage

    @contextmanager
    def stage(self: Any, name: str) -> Iterator[None]:
        with original_stage(self, name), rec.span(rec.stages, name):
            yield

    pipeline._Run.stage = stage  # type: ignore[method-assign]

    def wrap(method: str, label_of: Any) -> None:
        original = getattr(GraphStore, method)

        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            with rec.span(rec.steps, label_of(*args, **kwargs)):
                return original(self, *args, **kwargs)

        setattr(GraphStore, method, wrapped)

    wrap("bulk_load_nodes", lambda table, rows, **kw: f"nodes {table}")
    wrap("copy_edges_into_empty", lambda rel, batches, scratch, **kw: f"edges {rel} {kw['from_table']}->{kw['to_table']}")
    wrap("bulk_load_rels", lambda rel, rows, **kw: f"edges(batch) {rel}")
    wrap("ensure_fts_index", lambda table="Chunk", *a, **kw: f"fts index {table}")
    # the index stage's vector files and CSC copies, a table at a time
    from kgviz.graph import search

    prepare = search.prepare_exact_search

    def prepare_labelled(store: Any, table: str, *args: Any, **kwargs: Any) -> Any:
        with rec.span(rec.steps, f"vector files {table}"):
            return prepare(store, table, *args, **kwargs)

    search.prepare_exact_search = prepare_labelled  # type: ignore[assignment]
    # the ket stage's last step: KET-RAG's keyword view made and stored (kgviz.graph.ket_view)
    from kgviz.index import ket_build

    store_view = ket_build.KetBuild._store_keyword_view

    def store_view_labelled(self: Any, *args: Any, **kwargs: Any) -> Any:
        with rec.span(rec.steps, "keyword view"):
            return store_view(self, *args, **kwargs)

    ket_build.KetBuild._store_keyword_view = store_view_labelled  # type: ignore[method-assign]


def _is_vector(arrow_type: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_fixed_size_list(arrow_type) or pa.types.is_list(arrow_type))


def digest(store: Any) -> dict[str, str]:
    """sha1 of every node table (every column, rows sorted by key, vectors bit for bit) and of
    every rel table pair (both ends' keys and every property, rows sorted), and of the vector
    files: two builds of one corpus compare by these."""
    import hashlib

    import pyarrow as pa
    import pyarrow.compute  # noqa: F401  (pa.compute)

    from kgviz.graph import vector_file

    def table_hash(table: pa.Table, sort_by: list[str]) -> str:
        h = hashlib.sha1()
        table = table.sort_by([(c, "ascending") for c in sort_by])
        for name in table.column_names:
            column = table.column(name).combine_chunks()
            h.update(name.encode())
            if _is_vector(column.type):  # a vector column, bit for bit
                h.update(column.is_null().to_numpy(zero_copy_only=False).tobytes())
                h.update(pa.compute.list_value_length(column).to_numpy(zero_copy_only=False).tobytes())
                h.update(column.flatten().to_numpy(zero_copy_only=False).astype("float32").tobytes())
            else:
                h.update(repr(column.to_pylist()).encode())
        return h.hexdigest()

    catalog = store._catalog()
    out = {}
    for table, columns in catalog.nodes.items():
        names = [c for c, _ in columns]
        arrow = store.query_arrow(f"MATCH (n:{table}) RETURN " + ", ".join(f"n.{c} AS {c}" for c in names))
        out[table] = table_hash(arrow, [store._pk(table)])
    for rel, props in catalog.rels.items():
        for a, b in catalog.pairs[rel]:
            ret = ", ".join([f"x.{store._pk(a)} AS f_", f"y.{store._pk(b)} AS t_"] + [f"r.{p} AS {p}" for p, _ in props])
            arrow = store.query_arrow(f"MATCH (x:{a})-[r:{rel}]->(y:{b}) RETURN {ret}")
            scalar = [c for c in arrow.column_names if not _is_vector(arrow.column(c).type)]
            out[f"{rel}:{a}->{b}"] = table_hash(arrow, scalar)
    folder = Path(store.path) / vector_file.VECTOR_DIR
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):  # the KET plan and keyword view's folders too
        out[f"file {path.relative_to(folder)}"] = hashlib.sha1(path.read_bytes()).hexdigest()
    return out


def measure(n: int, trace: bool, with_digest: bool = False, trim: bool = False) -> dict[str, Any]:
    from scale import corpus  # benchmarks/scale.py

    from kgviz.config import buffer_pool_bytes
    from kgviz.graph.store import GraphStore
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.ingest import load_paths
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    work = Path(tempfile.mkdtemp(prefix=f"kgviz_mem_{n}_"))
    try:
        corpus_file = work / "corpus.jsonl"
        corpus_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in corpus(n)), "utf-8")
        loaded = load_paths([corpus_file], max_bytes=corpus_file.stat().st_size + 1)
        if loaded.errors or not loaded.documents:
            raise SystemExit(f"the corpus did not load: {loaded.errors[:3]}")
        emb = HashingEmbedder()
        store = GraphStore.open(work / "db", embedder_id=emb.id, dim=emb.dim)
        rec = Recorder(trace, buffer_pool_bytes(), trim)
        instrument(rec)
        if trace:
            tracemalloc.start(1)
        start = status_mb()
        t0 = time.perf_counter()
        report = build(loaded.documents, store, Reasoner(OfflineLLM(), emb), BuildParams())
        build_s = time.perf_counter() - t0
        counts = report.counts
        hashes = digest(store) if with_digest else None
        store.close()
        return {
            "passages": n, "pool_mb": buffer_pool_bytes() >> 20, "build_s": round(build_s, 1),
            "rss_before_build_mb": start["VmRSS"],
            "peak_rss_mb": max(s["peak_mb"] for s in rec.stages),
            "counts": {k: counts[k] for k in ("Document", "Chunk", "Entity", "Triple", "FROM_CHUNK", "MENTIONS")},
            "stages": rec.stages, "write_steps": rec.steps,
            **({"all_counts": counts, "digest": hashes} if hashes else {}),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=10_000)
    ap.add_argument("--tracemalloc", action="store_true", help="also the Python heap per stage (slower build)")
    ap.add_argument("--digest", action="store_true", help="after the build, a hash of every table and vector file")
    ap.add_argument("--trim", action="store_true",
                    help="an experiment: hand freed C-heap and Arrow pages back as each stage begins, and record "
                         "how much that was (trim_freed_in_mb); it changes what later stages find")
    args = ap.parse_args()
    print(json.dumps(measure(args.passages, args.tracemalloc, args.digest, args.trim), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
