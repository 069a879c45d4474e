"""Build parameters, progress events and the build report (plain data)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from kgviz.errors import ConfigError
from kgviz.graph.batching import WRITE_BATCH_ROWS
from kgviz.types import Usage

STAGES = ("chunk", "knn", "extract", "resolve", "embed", "write", "doc_layer", "ket", "index")
# A progress event sent while a build waits for another build of the same workspace (not a stage:
# it has no timer in BuildReport.seconds_by_stage; the wait is BuildReport.waited_seconds).
WAIT_STAGE = "wait"
# the names of kgviz.index.ket.KET_PRESETS (imported lazily there: ket.py needs the store layer)
KET_PRESET_NAMES = ("default", "paper", "code")


@dataclass(frozen=True)
class BuildParams:
    """Knobs of ``kgviz.index.pipeline.build``."""

    chunk_tokens: int = 300
    """Tokens per chunk (ours; same default as Settings.chunk_tokens)."""
    chunk_overlap: int = 30
    """Tokens of trailing sentences repeated at the start of the next chunk (ours)."""
    workers: int = 4
    """Concurrent extraction calls (ours; the provider SDKs retry 429s and 5xx themselves). An
    offline build's Python-bound work (pattern extraction of 2,000+ chunks, hashing embeddings of
    10,000+ texts) runs in this many worker processes at most, one per usable core; 1 keeps it in
    the build's process (kgviz.index.processes; the graph is the same either way)."""
    similar_docs_k: int = 3
    """K of the KG-Retriever document layer: each document links to its K most similar documents
    by embedding cosine, the weight being the cosine (KG-Retriever §3.2.1, Eq. 1). §4.1
    (Implementation Details) uses K=3 for MuSiQue and 2WikiMultiHopQA (K=1 and 2 for the
    CRUD-QA sets; the HotpotQA value is lost in the published text), so 3 is our default."""
    max_triples_per_chunk: int = 80
    """Triples kept per chunk (ours): bounds a runaway LLM reply."""
    batch_size: int = 16
    """Extraction rows per flush (ours). A flush also waits for ``flush_interval_s``."""
    flush_interval_s: float = 1.0
    """Least seconds between two flushes of Extraction rows (ours): bounds the work a killed
    build loses while keeping fast offline builds from doing thousands of tiny writes."""
    embed_batch_size: int = 256
    """Texts per embedder call (ours)."""
    write_batch_rows: int = WRITE_BATCH_ROWS
    """Rows per batch of the write stage, per node and edge table (ours): the write stage holds one
    batch of rows, vectors and their Arrow copy at a time instead of whole tables (issue 29: its
    peak memory grew with the corpus). A node batch is one COPY; a first build's edges of a table
    are one COPY of a file written a batch at a time. Default: one Kùzu node group (2^17 rows), as
    every COPY starts a new group. The graph is the same for any value."""
    description_max_sentences: int = 3
    """Sentences kept in an entity description (ours)."""
    expected_output_ratio: float = 2.0
    """Cost estimate only: expected output tokens per chunk token (ours: the six examples of the
    extraction prompt average 2.2 with kgviz's approximate tokenizer; capped by the task's
    max_tokens)."""
    retry_failed: bool = True
    """Re-extract chunks whose stored Extraction failed (provider errors, unreadable replies)
    when their document is given to build again, even if the document was completed (ours)."""
    ket_enabled: bool = True
    """Build KET-RAG's index (paper 004, Algorithm 3; kgviz.index.ket): KNN chunk graph, PageRank
    core chunks, sub-chunks and keywords. On by default (ours) so that every registered method
    (ket-rag and keyword-rag need the keyword layer) runs on a default build; with
    ``core_fraction`` = 1 this adds the KET layer without changing what the KG holds. Off: no
    KNN/keyword layer (the KET-RAG variants then fail with "no KET keyword index")."""
    core_fraction: float = 1.0
    """β, the fraction of chunks whose triples are extracted when ket_enabled (Algorithm 3 line 8;
    the paper uses 0.8, §6.1, as does the authors' code). Default 1.0 (ours): the KG covers every
    chunk, so kg-rag, kg-retriever and kg-infused see a complete graph and comparisons are fair,
    while ket-rag's *default* params simulate the paper's β = 0.8 PageRank skeleton on it
    (kgviz.methods.ket_rag). Set 0.8 (CLI ``--beta 0.8``) to build a real skeleton and save about
    20% of the extraction tokens (§5.3); the methods then use the skeleton as built."""
    core_selection: str = "pagerank"
    """'pagerank' (KET-RAG-P) or 'random' (KET-RAG-U, seeded), §6.1."""
    knn_k: int = 2
    """K of the KNN chunk graph: K/2 lexical + K/2 semantic neighbours per chunk (§6.1: K = 2)."""
    subchunk_tau: int = -1
    """τ, halvings of a chunk into sub-chunks (Algorithm 3 line 10); -1 = the τ that gives
    ~150-token sub-chunks for chunk_tokens (§6.2, §6.5; τ = 1 for 300-token chunks)."""
    ket_preset: str = "default"
    """KET index details, 'default', 'paper' or 'code' (kgviz.index.ket.KET_PRESETS): 'default' is
    Algorithm 3 with our keyword filters and adaptive τ, 'paper' switches those off, 'code' is the
    authors' undirected KNN graph."""
    keyword_max_df: float | None = None
    """Overrides the preset's KetParams.keyword_max_df (1.0 keeps every word, the paper); None = the preset's."""
    min_word_len: int | None = None
    """Overrides the preset's KetParams.min_word_len (1 keeps every word, the paper); None = the preset's."""
    adaptive_tau: bool | None = None
    """Overrides the preset's KetParams.adaptive_tau (False: every chunk halved τ times, the paper)."""
    ket_descriptions: bool = True
    """With an LLM and ket_enabled: ask it for a description of every skeleton entity and
    relationship, embedded for the skeleton channel (Algorithm 1 line 3; prompt DESCRIBE_SKELETON,
    ours modelled on the paper; kgviz.index.ket_describe): one more call per extracted chunk.
    Offline, or False, the skeleton keeps the source-sentence descriptions (ours). CLI
    ``--no-ket-descriptions``."""
    batch: bool = False
    """Send the extraction through the provider's batch endpoint (OpenAI Batch API, Anthropic
    Message Batches; kgviz.index.batch_extract): half the price, replies within 24 h, a stopped
    build resumes the same batch. Only for openai: and anthropic: models."""
    batch_poll_s: float = 30.0
    """Least seconds between two status calls while a batch runs (ours; kgviz.providers.batch_api.wait_seconds)."""

    def __post_init__(self) -> None:
        for name in ("chunk_tokens", "workers", "batch_size", "embed_batch_size", "write_batch_rows",
                     "max_triples_per_chunk"):
            if getattr(self, name) < 1:
                raise ConfigError(f"BuildParams.{name} must be at least 1 (got {getattr(self, name)})")
        if self.expected_output_ratio < 0 or self.flush_interval_s < 0 or self.batch_poll_s < 0:
            raise ConfigError("BuildParams.expected_output_ratio, flush_interval_s and batch_poll_s must be >= 0")
        if self.similar_docs_k < 0 or self.chunk_overlap < 0 or self.description_max_sentences < 0:
            raise ConfigError("BuildParams: similar_docs_k, chunk_overlap and description_max_sentences must be >= 0")
        if not 0.0 < self.core_fraction <= 1.0 or self.core_selection not in ("pagerank", "random"):
            raise ConfigError("BuildParams: core_fraction must be in (0, 1] and core_selection 'pagerank' or 'random'")
        if self.knn_k < 2 or self.knn_k % 2 or self.subchunk_tau < -1 or self.ket_preset not in KET_PRESET_NAMES:
            raise ConfigError("BuildParams: knn_k must be even and >= 2, subchunk_tau >= -1 (-1 = auto), "
                              f"ket_preset one of {', '.join(KET_PRESET_NAMES)}")
        if self.chunk_overlap >= self.chunk_tokens:
            raise ConfigError(
                f"BuildParams.chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_tokens ({self.chunk_tokens})"
            )


    def ket_params(self) -> Any:
        """The kgviz.index.ket.KetParams these fields describe."""
        from dataclasses import replace

        from kgviz.index.ket import KET_PRESETS

        overrides: dict[str, Any] = {k: v for k, v in (("keyword_max_df", self.keyword_max_df), ("min_word_len", self.min_word_len),
                                       ("adaptive_tau", self.adaptive_tau)) if v is not None}
        return replace(KET_PRESETS[self.ket_preset], k=self.knn_k, beta=self.core_fraction,
                       selection=self.core_selection, tau=None if self.subchunk_tau < 0 else self.subchunk_tau,
                       **overrides)


@dataclass(frozen=True)
class ProgressEvent:
    stage: str
    done: int
    total: int
    message: str = ""
    usage_so_far: Usage = field(default_factory=Usage)

    @property
    def fraction(self) -> float:
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)


# How the extraction stage (kgviz.index.extract, and its batches: kgviz.index.batch_extract) reports:
# (chunks done, chunks in all, message, usage so far); the pipeline makes it an "extract" ProgressEvent.
ExtractProgress = Callable[[int, int, str, Usage], None]


@dataclass(frozen=True)
class CostEstimate:
    chunks: int
    input_tokens: int
    output_tokens: int
    usd: float
    calls: int
    model: str
    offline: bool
    price_known: bool = True  # False when the model is not in the price table (usd is then 0)
    beta: float = 1.0  # β of the build: the share of chunks extracted (KET-RAG core chunks; 1 = every chunk)
    total_chunks: int = 0  # chunks of the documents; ``chunks`` of them are extracted (0 = same as chunks)
    full: "CostEstimate | None" = None  # what extracting every chunk (a full KG, β = 1) would cost; None when β = 1
    # tokens the extraction would send / receive with an LLM (kgviz's tokenizer): the same as
    # input/output_tokens, except offline, where nothing is sent but a user still wants the figure
    llm_input_tokens: int = 0
    llm_output_tokens: int = 0
    # local models (kgviz.index.estimate): $0, and the time from measured tokens/s; None = unknown
    local: bool = False
    seconds: float | None = None
    # the range the measured calls' own rates allow (the fastest, the slowest); None when fewer than
    # two calls timed both rates (kgviz.providers.speed.LocalSpeed.call_seconds_range)
    seconds_low: float | None = None
    seconds_high: float | None = None
    # the same extraction through the provider's batch endpoint (BuildParams.batch; OpenAI and
    # Anthropic bill it at half price); None where there is none (offline, local, other servers)
    batch_usd: float | None = None
    time_source: str = ""  # where the time comes from, or why it is unknown
    # the KET skeleton's description calls (Alg. 1 line 3; kgviz.index.estimate_describe), counted
    # in the figures above; None when the build makes none (ket_descriptions or ket_enabled off)
    descriptions: "CostEstimate | None" = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BuildReport:
    counts: dict[str, int] = field(default_factory=dict)  # store.counts() after the build
    new_documents: int = 0
    skipped_documents: int = 0  # already in the graph
    resumed_documents: int = 0  # found half-written by an interrupted build and rebuilt
    retried_documents: int = 0  # built before with failed chunks, rebuilt to retry them
    new_chunks: int = 0
    extracted_chunks: int = 0  # chunks extracted in this build (a reply was read)
    failed_chunks: int = 0  # chunks whose extraction failed in this build (also listed in failures)
    reused_extractions: int = 0  # chunks whose stored Extraction row was reused (resume)
    new_triples: int = 0
    new_entities: int = 0
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (chunk_id, error, raw excerpt)
    n_malformed_lines: int = 0
    # grounding (kgviz.index.ground): facts kept, and facts left out because a name is not in the
    # chunk's text (of which copies of the prompt's examples), in total and per chunk
    facts_accepted: int = 0
    facts_ungrounded: int = 0
    facts_prompt_examples: int = 0
    chunk_facts: list[dict[str, Any]] = field(default_factory=list)  # chunk_id, accepted, ungrounded, prompt_examples, malformed
    rejected_facts: list[tuple[str, str, str]] = field(default_factory=list)  # (chunk_id, fact, why), the first 200
    ungrounded_chunks: int = 0  # chunks with more facts left out than kept
    not_following_prompt: bool = False  # an LLM build where most chunks are ungrounded: CLI exit 3
    merges: list[tuple[str, list[str], int]] = field(default_factory=list)
    usage_by_stage: dict[str, Usage] = field(default_factory=dict)
    seconds_by_stage: dict[str, float] = field(default_factory=dict)
    mode: str = "offline"
    warnings: list[str] = field(default_factory=list)
    # index steps an interrupted build left half made, redone by this one (also in warnings)
    repairs: list[str] = field(default_factory=list)
    ket: dict[str, Any] = field(default_factory=dict)  # KET-RAG: core chunks, KNN, keywords, skeleton cost
    waited_seconds: float = 0.0  # spent waiting for another build of the workspace (not a stage)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for u in self.usage_by_stage.values():
            total = total + u
        return total

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["usage_by_stage"] = {k: v.to_dict() for k, v in self.usage_by_stage.items()}
        d["usage"] = self.usage.to_dict()
        d["failures"] = [list(f) for f in self.failures]
        d["rejected_facts"] = [list(f) for f in self.rejected_facts]
        d["merges"] = [[name, list(forms), n] for name, forms, n in self.merges]
        d["seconds_total"] = round(sum(self.seconds_by_stage.values()), 3)
        return d
