"""KET-RAG indexing (paper 004, Algorithm 3 "KET-Index"): the KNN chunk graph, PageRank core
chunks, and the text-keyword bipartite graph, written into the graph store.

Stages, in build order:

1. ``plan_core`` (pure): KNN graph over every chunk (``kgviz.index.knn``), PageRank (Eq. 1) and
   the core chunks V_c = the ceil(β·|V|) best chunks (line 8), by PageRank (KET-RAG-P) or by a
   seeded uniform draw (KET-RAG-U, §6.1). Only core chunks then go to triple extraction (line 9):
   the build pipeline passes ``plan.core`` to its extract stage (β = 1 extracts every chunk).
2. ``write_core``: KNN edges (kind lexical|semantic, weight), Chunk.pagerank, Chunk.core and the
   Meta keys below, replacing what an earlier build wrote (a new chunk can change every rank).
3. ``write_keyword_layer``: SubChunk + SUB_CHUNK_OF, Keyword + HAS_KEYWORD
   (``kgviz.index.ket_keywords``), rebuilt when the set of chunks or the rules change. No HNSW
   index on Keyword: building one over HotpotQA's 19k keywords took 37 s, and retrieval searches
   an in-memory copy instead (kgviz.methods.ket_cache).

``build_ket_index`` runs 1-3 on a graph whose chunks are already stored (the benchmark, and
graphs built before KET was enabled: their KG then covers every chunk, so their skeleton is the
full KG, β_built = 1).

Meta keys: ``ket.params`` (JSON of KetParams), ``ket.beta`` (β used for the core selection),
``ket.skeleton_beta`` (fraction of chunks whose triples the KG holds: β when extraction was
restricted to core chunks, else 1), ``ket.n_chunks``, ``ket.n_core``, ``ket.keyword_signature``.

The random core ranking hashes (seed, chunk id) instead of shuffling a list (ours): it does not
depend on input order, and the top-β set grows with β, like the PageRank one.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from kgviz.errors import BuildError, ConfigError
from kgviz.graph import ket_view, reads, writes
from kgviz.graph.batching import WRITE_BATCH_ROWS
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import ChunkRankUpdate
from kgviz.index import memory
from kgviz.index.ket_keywords import KeywordLayer, KeywordRules, KnownVectors, build_keyword_layer
from kgviz.index.knn import LEXICAL, SEMANTIC, KnnGraph, build_knn, pagerank
from kgviz.index.spill import SPILL_PREFIX
from kgviz.providers.base import Embedder

SELECTIONS = ("pagerank", "random")
SUBCHUNK_TARGET_TOKENS = 150  # §6.2/§6.5 pair ℓ = 150, 300, 600, 1200 with τ = 0..3: ~150-token sub-chunks
EXCERPT_CHARS = 200

META_PARAMS = "ket.params"
META_BETA = "ket.beta"
META_SKELETON_BETA = "ket.skeleton_beta"
META_N_CHUNKS = "ket.n_chunks"
META_N_CORE = "ket.n_core"
META_KEYWORD_SIGNATURE = "ket.keyword_signature"

Progress = Callable[[str, int, int, str], None]  # (stage, done, total, message)


@dataclass(frozen=True)
class KetParams:
    """Index-time KET-RAG parameters (retrieval ones live in kgviz.methods.ket_rag)."""

    k: int = 2
    """K: each chunk gets K/2 lexical + K/2 semantic KNN out-edges (Algorithm 3 lines 4-5; K = 2
    in §6.1; the authors' code: KNN_GRAPH_EDGES = 1 per kind). Even, >= 2."""
    beta: float = 0.8
    """β: fraction of chunks chosen as core chunks, ceil(β·|V|) (Algorithm 3 line 8). 0.8 in
    §6.1 and in the authors' code (KG_SKELETON_BUDGET = 0.8). 1.0 = every chunk = full KG."""
    selection: str = "pagerank"
    """How core chunks are chosen: 'pagerank' (KET-RAG-P, §5.1 Eq. 1) or 'random' (KET-RAG-U,
    uniform, seeded; §6.1)."""
    seed: int = 42
    """Seed of the 'random' selection (the authors' code seeds with 42)."""
    tau: int | None = None
    """τ: each chunk is halved τ times into 2^τ sub-chunks (Algorithm 3 line 10). None = the τ
    that gives ~150-token sub-chunks for the build's chunk size (the paper pairs ℓ = 1200 with
    τ = 3 and ℓ = 150 with τ = 0, §6.2; §6.5), i.e. τ = 1 for kgviz's 300-token chunks; a piece
    is then halved only while that brings it nearer ~150 tokens, so a short document (a
    50-token passage) stays whole instead of losing its subject to a mid-sentence cut (ours). An
    explicit τ halves every chunk τ times, as the paper does."""
    damping: float = 0.85
    """PageRank damping, 1 - α of Eq. 1 (the paper gives no α; the authors' code calls
    networkx pagerank with alpha = 0.85)."""
    undirected: bool = False
    """PageRank over directed KNN out-edges (False: Algorithm 3 line 6 adds (v_i, v_j)) or over
    the undirected graph (True: the authors' code builds a networkx Graph)."""
    exclude_lexical: bool = True
    """Semantic neighbours are drawn from V minus the lexical ones (True: Algorithm 3 line 5); the
    authors' code draws both kinds independently (False)."""
    min_word_len: int = 3
    """Shortest word used as a keyword and for lexical similarity (ours; 1 keeps every word, the
    paper)."""
    keyword_max_df: float = 0.05
    """A word in more than max(keyword_max_df·#sub-chunks, keyword_df_floor) sub-chunks is not a
    keyword node (ours; see kgviz.index.ket_keywords). 1.0 keeps every word (the paper)."""
    keyword_df_floor: int = 20
    """Lower bound of that document-frequency limit, so small corpora keep their words (ours)."""
    adaptive_tau: bool = True
    """With ``tau`` None, halve a piece only while that brings it nearer ~150 tokens (True, ours)
    or halve every chunk the chunk size's τ times (False: Algorithm 3 line 10)."""
    description_max_sentences: int = 10
    """Sentences stored as a keyword's description (ours; display only, the embedding averages
    every sentence that contains the keyword)."""

    def __post_init__(self) -> None:
        if self.k < 2 or self.k % 2:
            raise ConfigError(f"KET K must be an even number >= 2 (K/2 lexical + K/2 semantic), got {self.k}")
        if not 0.0 < self.beta <= 1.0:
            raise ConfigError(f"KET β (core fraction) must be in (0, 1], got {self.beta}")
        if self.selection not in SELECTIONS:
            raise ConfigError(f"KET core selection must be one of {', '.join(SELECTIONS)}, not {self.selection!r}")
        if self.tau is not None and not 0 <= self.tau <= 8:
            raise ConfigError(f"KET τ (number of halvings) must be between 0 and 8, got {self.tau}")
        if not 0.0 < self.damping < 1.0:
            raise ConfigError(f"PageRank damping must be in (0, 1), got {self.damping}")
        if self.min_word_len < 1 or self.keyword_df_floor < 1 or not 0.0 < self.keyword_max_df <= 1.0:
            raise ConfigError("KET keyword rules: min_word_len and keyword_df_floor >= 1, keyword_max_df in (0, 1]")

    def resolved_tau(self, chunk_tokens: int) -> int:
        if self.tau is not None:
            return self.tau
        return max(0, round(math.log2(max(1, chunk_tokens) / SUBCHUNK_TARGET_TOKENS)))

    def keyword_rules(self, chunk_tokens: int) -> KeywordRules:
        return KeywordRules(tau=self.resolved_tau(chunk_tokens), min_word_len=self.min_word_len,
                            subchunk_tokens=SUBCHUNK_TARGET_TOKENS if self.tau is None and self.adaptive_tau else None,
                            keyword_max_df=self.keyword_max_df, keyword_df_floor=self.keyword_df_floor,
                            description_max_sentences=self.description_max_sentences)


KET_PRESETS: dict[str, KetParams] = {
    # kgviz's build: Algorithm 3 with the keyword filters and the adaptive τ of ours (see the fields)
    "default": KetParams(),
    # Algorithm 3 with nothing of ours the paper defines: every non-stop word is a keyword (§5.1) and
    # every chunk is halved τ times (line 10). The regex word split stays ours (the paper does not
    # say how it tokenizes), as does the τ for the chunk size (its ℓ–τ pairing, §6.2)
    "paper": KetParams(min_word_len=1, keyword_max_df=1.0, adaptive_tau=False),
    # waetr/KET-RAG indexing_sket/filter_chunks.py: undirected networkx graph, lexical and semantic
    # neighbours drawn independently; defaults.py: budget 0.8, pagerank, 1 edge per kind
    "code": KetParams(undirected=True, exclude_lexical=False),
}


# --- core chunks ----------------------------------------------------------------------------------
def random_rank_key(seed: int, chunk_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{chunk_id}".encode(), digest_size=8).digest(), "big")


def core_ranking(ids: Sequence[str], scores: Sequence[float] | None, selection: str, seed: int) -> list[str]:
    """Chunk ids best first: by PageRank (ties by id), or in seeded hash order for 'random'."""
    if selection == "random":
        return sorted(ids, key=lambda c: (random_rank_key(seed, c), c))
    if scores is None:
        raise ConfigError("PageRank selection needs PageRank scores")
    return [c for _, c in sorted(zip((-float(s) for s in scores), ids))]


def n_core(n: int, beta: float) -> int:
    """ceil(β·n) (Algorithm 3 line 8), computed so that float noise (0.7·10 = 7.000000000000001)
    does not add a chunk."""
    return min(n, math.ceil(round(beta * n, 9)))


@dataclass
class CorePlan:
    ids: list[str]  # chunk ids, sorted (the KNN graph's index order)
    knn: KnnGraph
    pagerank: np.ndarray
    ranking: list[str]  # selection order, best first
    core: set[str]
    params: KetParams
    seconds: float = 0.0

    def core_in_order(self) -> list[str]:
        return [c for c in self.ranking if c in self.core]


def plan_core(chunk_ids: Sequence[str], texts: Sequence[str], emb: np.ndarray, params: KetParams) -> CorePlan:
    """KNN graph, PageRank and core chunks of the given chunks (Algorithm 3 lines 2-8). Inputs are
    put in chunk-id order first, so the result does not depend on the order they come in."""
    t0 = time.perf_counter()
    if len(chunk_ids) != len(texts) or len(texts) != len(emb):
        raise BuildError(f"plan_core: {len(chunk_ids)} ids, {len(texts)} texts, {len(emb)} embeddings")
    order = sorted(range(len(chunk_ids)), key=lambda i: chunk_ids[i])
    ids = [chunk_ids[i] for i in order]
    txt = [texts[i] for i in order]
    e = np.asarray(emb, dtype=np.float32)[order] if len(order) else np.zeros((0, 1), np.float32)
    knn = build_knn(txt, e, params.k, exclude_lexical=params.exclude_lexical, min_len=params.min_word_len)
    pr = pagerank(len(ids), knn.src, knn.dst, damping=params.damping, undirected=params.undirected)
    ranking = core_ranking(ids, pr.tolist(), params.selection, params.seed)
    core = set(ranking[: n_core(len(ids), params.beta)])
    return CorePlan(ids, knn, pr, ranking, core, params, time.perf_counter() - t0)


def write_core(store: GraphStore, plan: CorePlan, *, skeleton_beta: float) -> None:
    """Replace the KNN edges, set Chunk.pagerank/core for every planned chunk, record Meta.
    ``skeleton_beta``: the fraction of chunks the stored KG was extracted from (β when the build
    extracted core chunks only, 1 when it extracted every chunk)."""
    with store.write_lock():
        writes.delete_knn(store)
        store.bulk_load_rels("KNN", plan.knn.rows(plan.ids), from_table="Chunk", to_table="Chunk")
        rows: list[ChunkRankUpdate] = [{"id": c, "pr": float(p), "core": c in plan.core}
                                       for c, p in zip(plan.ids, plan.pagerank.tolist())]
        writes.set_chunk_ranks(store, rows)
        store.set_meta(META_PARAMS, json.dumps(asdict(plan.params), sort_keys=True))
        store.set_meta(META_BETA, plan.params.beta)
        store.set_meta(META_SKELETON_BETA, round(float(skeleton_beta), 6))
        store.set_meta(META_N_CHUNKS, len(plan.ids))
        store.set_meta(META_N_CORE, len(plan.core))


# --- sub-chunks and keywords ----------------------------------------------------------------------
def keyword_signature(chunk_ids: Sequence[str], rules: KeywordRules) -> str:
    h = hashlib.sha256(json.dumps(asdict(rules), sort_keys=True).encode())
    for c in sorted(chunk_ids):
        h.update(c.encode() + b"\0")
    return h.hexdigest()[:32]


def write_keyword_layer(store: GraphStore, layer: KeywordLayer, signature: str,
                        batch_rows: int = WRITE_BATCH_ROWS, *, vectors: bool = True) -> None:
    """Replace the sub-chunks and the keyword layer whole: keywords depend on every sub-chunk (a
    new document changes descriptions, embeddings and the frequency limit), and a changed τ
    changes every sub-chunk. Loaded ``batch_rows`` rows per COPY, each batch's Arrow table (the
    keywords' descriptions, the dense vectors) made only when it is loaded (issue 29); the
    sub-chunks' texts are let go once written. ``vectors=False``: the Keyword and SubChunk rows
    are loaded without their vectors (``emb`` null), which the caller keeps in KET's keyword
    view (ket_view.META_LAYER_VECTORS says where they are; issue 29: the 768-float column was
    ~90% of the Keyword COPY's time and half its memory).

    The layer was just deleted, so its tables are empty and its rows new and distinct (sub-chunk
    ids are chunk id + position, keywords one per word): as the write stage loads a first build
    (kgviz.index.graph_write), no key is looked up before a node COPY and each edge table is
    loaded with one COPY from a file. Looked up batch by batch, HAS_KEYWORD's millions of edges at
    100,000 passages were each checked against every edge loaded before them."""
    with store.write_lock():
        writes.delete_keyword_layer(store)
        store.set_meta(ket_view.META_LAYER_VECTORS, ket_view.IN_GRAPH if vectors else ket_view.IN_VIEW)
        subchunks = layer.subchunks  # Arrow tables made a batch at a time (SubChunkRows)
        starts = range(0, len(subchunks), batch_rows)
        new_rows = not store.holds_rows("SubChunk")
        for start in starts:
            store.bulk_load_nodes("SubChunk", subchunks.table(start, start + batch_rows, vectors=vectors),
                                  new_rows=new_rows)
        _load_edges(store, "SUB_CHUNK_OF", (subchunks.parents(s, s + batch_rows) for s in starts), "SubChunk", "Chunk")
        subchunks.release_texts()  # written: not read again
        memory.give_back()
        keywords = layer.keywords  # Arrow tables made a batch at a time (KeywordRows)
        new_rows = not store.holds_rows("Keyword")
        for start in range(0, len(keywords), batch_rows):
            store.bulk_load_nodes("Keyword", keywords.table(start, start + batch_rows, vectors=vectors),
                                  new_rows=new_rows)
        links = layer.has_keyword
        _load_edges(store, "HAS_KEYWORD", (links.table(s, s + batch_rows) for s in range(0, len(links), batch_rows)),
                    "SubChunk", "Keyword")
        store.set_meta(META_KEYWORD_SIGNATURE, signature)


def _load_edges(store: GraphStore, rel: str, batches: Iterable[Any], from_table: str, to_table: str) -> None:
    """``batches`` of edges into ``rel``: into an empty table with one COPY from a file in a
    scratch folder of the workspace (a killed build's is removed by the next build: SPILL_PREFIX),
    else a checked COPY per batch (kgviz.graph.store.bulk_load_rels)."""
    if store.holds_rows(rel, (from_table, to_table)):
        for batch in batches:
            store.bulk_load_rels(rel, batch, from_table=from_table, to_table=to_table)
        return
    with tempfile.TemporaryDirectory(prefix=SPILL_PREFIX, dir=store.path) as scratch:
        store.copy_edges_into_empty(rel, batches, Path(scratch), from_table=from_table, to_table=to_table)


# --- the whole KET index over stored chunks --------------------------------------------------------
@dataclass
class KetReport:
    n_chunks: int = 0
    n_core: int = 0
    knn_edges: dict[str, int] = field(default_factory=dict)  # kind -> count
    keyword_stats: dict[str, int] = field(default_factory=dict)
    keywords_rebuilt: bool = False
    tau: int = 0
    seconds_by_stage: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def stored_chunks(store: GraphStore) -> tuple[list[str], list[str], list[str], np.ndarray]:
    """(ids, doc ids, texts, embeddings) of every stored chunk, in id order."""
    rows = reads.all_chunks(store)
    ids = [r["id"] for r in rows]
    return ids, [r["doc"] for r in rows], [r["text"] for r in rows], stored_chunk_vectors(store, ids)


def stored_chunk_vectors(store: GraphStore, ids: list[str]) -> np.ndarray:
    """The stored embeddings of the chunks ``ids``, in that order."""
    embs = store.get_embeddings("Chunk", ids)
    missing = [c for c in ids if c not in embs]
    if missing:
        raise BuildError(f"{len(missing)} chunks have no embedding (e.g. {missing[0]})",
                         hint="finish the base build (its embed stage) before the KET stages")
    return np.stack([embs[c] for c in ids]) if ids else np.zeros((0, int(store.dim)), np.float32)


def build_keywords(store: GraphStore, embedder: Embedder, params: KetParams, chunk_tokens: int, *,
                   ids: Sequence[str], docs: Sequence[str], texts: Sequence[str],
                   batch_size: int = 256, progress: Progress | None = None, force: bool = False,
                   write_batch_rows: int = WRITE_BATCH_ROWS, workers: int = 1,
                   on_written: Callable[[KeywordLayer], None] | None = None,
                   known: KnownVectors | None = None, vectors: bool = True) -> tuple[dict[str, int], bool]:
    """Sub-chunks + keywords for the given (all stored) chunks, unless the stored layer already
    matches them (``workers``: embedding processes, kgviz.index.embed; ``known``: chunk vectors
    the build already made, taken by the sub-chunks that are their whole chunk). Returns (stats, rebuilt).
    ``on_written`` is handed a rebuilt layer once it is written (the build makes KET's keyword
    view from it); ``vectors=False`` leaves the layer's vectors out of the graph
    (``write_keyword_layer``: the caller stores them in the view)."""
    rules = params.keyword_rules(chunk_tokens)
    sig = keyword_signature(ids, rules)
    if not force and store.get_meta(META_KEYWORD_SIGNATURE) == sig:
        return {}, False

    def relay(message: str, done: int, total: int) -> None:
        if progress is not None:
            progress("keywords", done, total, message)

    layer = build_keyword_layer(list(zip(ids, docs, texts)), embedder, rules, batch_size=batch_size, progress=relay,
                                workers=workers, known=known)
    write_keyword_layer(store, layer, sig, write_batch_rows, vectors=vectors)
    if on_written is not None:
        on_written(layer)
    return layer.stats(), True


def build_ket_index(store: GraphStore, embedder: Embedder, params: KetParams = KetParams(), *, chunk_tokens: int = 300,
                    skeleton_beta: float = 1.0, progress: Progress | None = None, force: bool = False) -> KetReport:
    """KNN + PageRank + core marks + sub-chunks + keywords over the chunks already in ``store``.
    ``skeleton_beta``: the fraction of chunks the stored KG was extracted from (1 = full KG)."""
    with store.build_lock():  # the same index a build writes: never beside a running build
        return _build_ket_index(store, embedder, params, chunk_tokens, skeleton_beta, progress, force)


def _build_ket_index(store: GraphStore, embedder: Embedder, params: KetParams, chunk_tokens: int, skeleton_beta: float,
                     progress: Progress | None, force: bool) -> KetReport:
    report = KetReport()
    t0 = time.perf_counter()
    ids, docs, texts, emb = stored_chunks(store)
    plan = plan_core(ids, texts, emb, params)
    report.seconds_by_stage["knn"] = time.perf_counter() - t0
    if progress is not None:
        progress("knn", len(ids), len(ids), f"{len(plan.knn)} KNN edges, {len(plan.core)} core chunks")
    t1 = time.perf_counter()
    write_core(store, plan, skeleton_beta=skeleton_beta)
    report.seconds_by_stage["core"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    report.keyword_stats, report.keywords_rebuilt = build_keywords(
        store, embedder, params, chunk_tokens, ids=ids, docs=docs, texts=texts, progress=progress, force=force)
    report.seconds_by_stage["keywords"] = time.perf_counter() - t2
    report.n_chunks, report.n_core = len(ids), len(plan.core)
    report.knn_edges = {kind: int(np.count_nonzero(plan.knn.kind == kind)) for kind in (LEXICAL, SEMANTIC)}
    report.tau = params.resolved_tau(chunk_tokens)
    return report


# --- indexing cost: the skeleton against a full KG (§5.3) ------------------------------------------
@dataclass
class SkeletonCost:
    """Extraction tokens of the skeleton against extracting every chunk (§5.3: KET-Index spends
    about β of KG-Index's LLM tokens). Estimates use kgviz's tokenizer on the rendered extraction
    prompt, and ``expected_output_ratio`` x chunk tokens for the reply (as
    kgviz.index.estimate does); ``skeleton_actual_*`` are what the provider reported (0 offline).
    ``full_extrapolated_tokens`` scales the actual skeleton tokens by full/skeleton estimates."""

    beta: float
    n_chunks: int
    n_core: int
    full_estimate_input: int
    full_estimate_output: int
    skeleton_estimate_input: int
    skeleton_estimate_output: int
    skeleton_actual_input: int = 0
    skeleton_actual_output: int = 0

    @property
    def full_estimate_tokens(self) -> int:
        return self.full_estimate_input + self.full_estimate_output

    @property
    def skeleton_estimate_tokens(self) -> int:
        return self.skeleton_estimate_input + self.skeleton_estimate_output

    @property
    def skeleton_actual_tokens(self) -> int:
        return self.skeleton_actual_input + self.skeleton_actual_output

    @property
    def full_extrapolated_tokens(self) -> int | None:
        if not self.skeleton_actual_tokens or not self.skeleton_estimate_tokens:
            return None
        return round(self.skeleton_actual_tokens * self.full_estimate_tokens / self.skeleton_estimate_tokens)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(full_estimate_tokens=self.full_estimate_tokens, skeleton_estimate_tokens=self.skeleton_estimate_tokens,
                 skeleton_actual_tokens=self.skeleton_actual_tokens,
                 full_extrapolated_tokens=self.full_extrapolated_tokens,
                 estimated_saving=(1.0 - self.skeleton_estimate_tokens / self.full_estimate_tokens)
                 if self.full_estimate_tokens else 0.0)
        return d


@functools.lru_cache(maxsize=1)
def _prompt_tokens() -> int:
    """Tokens of the extraction call around the chunk text: the system prompt and the rendered
    prompt of an empty chunk."""
    from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM, render_extract_triples
    from kgviz.text import count_tokens

    return count_tokens(EXTRACT_TRIPLES_SYSTEM) + count_tokens(render_extract_triples(""))


def extraction_estimate(text: str, n_tokens: int, expected_output_ratio: float) -> tuple[int, int]:
    """(input, output) tokens one extraction call on this chunk is expected to take. The prompt's
    tokens are counted once, and the chunk's added: no token crosses the whitespace around the
    inserted text, so the sum is the count of the whole rendered prompt (tested), without
    rendering and counting the ~1,000-token prompt again for every chunk (issue 29: a tenth of the
    ket stage at 10k passages)."""
    from kgviz.prompts.extraction import EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS, chunk_text_for_prompt
    from kgviz.text import count_tokens

    return (_prompt_tokens() + count_tokens(chunk_text_for_prompt(text)),
            min(EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS, round(expected_output_ratio * n_tokens)))


def skeleton_cost(chunks: Sequence[tuple[str, str, int]], core: set[str], beta: float, *,
                  expected_output_ratio: float, actual_input: int = 0, actual_output: int = 0) -> SkeletonCost:
    """Cost comparison over ``chunks`` given as (chunk id, text, n_tokens)."""
    fi = fo = si = so = 0
    n_in_core = 0
    for cid, text, n in chunks:
        i, o = extraction_estimate(text, n, expected_output_ratio)
        fi, fo = fi + i, fo + o
        if cid in core:
            si, so, n_in_core = si + i, so + o, n_in_core + 1
    return SkeletonCost(beta, len(chunks), n_in_core, fi, fo, si, so, actual_input, actual_output)


# --- read side (Build page, methods) -----------------------------------------------------------------
def ket_info(store: GraphStore) -> dict[str, Any]:
    """What the stored KET index was built with; {} when the graph has none."""
    meta = reads.meta_with_prefix(store, "ket.")
    if META_PARAMS not in meta:
        return {}
    return {"params": json.loads(meta[META_PARAMS]), "beta": float(meta.get(META_BETA) or 1.0),
            "skeleton_beta": float(meta.get(META_SKELETON_BETA) or 1.0),
            "n_chunks": int(meta.get(META_N_CHUNKS) or 0), "n_core": int(meta.get(META_N_CORE) or 0)}


def knn_degree_distribution(store: GraphStore) -> dict[int, int]:
    """{degree: number of chunks} over the KNN graph, degree = in + out KNN edges (the quantity
    of paper Fig. 2; every chunk's out-degree is at most K). Chunks with no edge count at 0."""
    hist: dict[int, int] = {}
    for d_out, d_in in reads.knn_degrees(store).values():
        hist[d_out + d_in] = hist.get(d_out + d_in, 0) + 1
    return dict(sorted(hist.items()))


def core_chunks(store: GraphStore, limit: int = 20) -> list[tuple[str, float, str]]:
    """The core chunks by PageRank, best first: (chunk id, PageRank, text excerpt)."""
    rows = reads.core_chunk_rows(store, limit)
    out = []
    for r in rows:
        text = " ".join(str(r["text"] or "").split())
        excerpt = text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1].rstrip() + "…"
        out.append((r["id"], float(r["pr"] or 0.0), excerpt))
    return out
