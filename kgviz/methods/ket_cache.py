"""In-memory views of a graph's KET layer, so a KET-RAG retrieval costs milliseconds (ours).

Measured on HotpotQA (2,008 chunks -> 4,016 sub-chunks, 19,201 keywords, 768-d hashing vectors):
reading candidate vectors through Kùzu cost ~200 ms per question, and an HNSW index over the
keywords took 37 s to build. So the keyword channel works on a per-process copy instead: the
keyword matrix (cosine search is one matrix-vector product, exact), the sub-chunk matrix, token
counts and the HAS_KEYWORD adjacency as a sparse matrix. The copy is loaded on first use and
reloaded when Meta ``ket.keyword_signature`` changes (every keyword-layer rebuild writes a new
one). Memory: (keywords + sub-chunks) x dim x 4 bytes dense, ~72 MB here; hashing vectors are
mostly zeros and are held as sparse matrices (~25 MB, and the search is 5x faster). The first
build stores the view's arrays in the workspace and every process maps them
(kgviz.graph.ket_view).

Triple vectors (the skeleton channel's tie-break) are not copied: the few hundred a question
needs are read from the exact search's memory-mapped unit rows (``GraphStore.unit_vectors``), so
memory does not grow with the number of triples (issue 29: every triple vector was held, ~600 MB
at 200k triples). Where the table has no vector files (HNSW opted into) they are fetched from
Kùzu by id and remembered, at most TRIPLE_MEMO_MAX of them.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np
import scipy.sparse as sp

from kgviz.graph import ket_view, reads
from kgviz.graph.protocol import GraphStore
from kgviz.index.ket import META_KEYWORD_SIGNATURE
from kgviz.offline.stopwords import ENGLISH as STOPWORDS
from kgviz.vectors import unit_rows

_LOCK = threading.Lock()
_VIEWS: dict[str, "KeywordView"] = {}
_TRIPLES: dict[str, tuple[int, dict[str, np.ndarray]]] = {}  # fetched unit rows (no vector files)
_NAME_WORD = re.compile(r"[^\W_]+")
MAX_NAME_WORDS = 6  # ours: the longest entity name looked for in a question, in words
TRIPLE_MEMO_MAX = 50_000  # ours: vectors fetched from Kùzu remembered per graph (~150 MB at 768-d)


def _key(store: GraphStore) -> str:
    """A workspace re-created at the same path may use another embedder: key on both."""
    return f"{store.path}|{store.embedder_id}|{store.dim}"


@dataclass
class KeywordView:
    signature: str
    kw_ids: list[str]
    kw_words: list[str]
    kw_matrix: Any  # unit rows; numpy array or scipy CSC (kgviz.graph.ket_view.compact, by_column)
    kw_sub: sp.csr_matrix  # keyword x sub-chunk, 1 where HAS_KEYWORD
    sub_ids: list[str]
    sub_chunk: list[str]  # parent chunk of each sub-chunk
    sub_tokens: np.ndarray
    sub_matrix: Any  # unit rows; numpy array or scipy CSR
    chunk_label: dict[str, str] = field(default_factory=dict)  # chunk id -> "title · c<ord>"
    sub_index: dict[str, int] = field(default_factory=dict)
    by_chunk: dict[str, list[int]] = field(default_factory=dict)
    word_row: dict[str, int] = field(default_factory=dict)  # keyword word -> row
    kw_df: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # sub-chunks per keyword

    def __post_init__(self) -> None:
        self.sub_index = {s: i for i, s in enumerate(self.sub_ids)}
        self.word_row = {w: i for i, w in enumerate(self.kw_words)}
        self.kw_df = np.diff(self.kw_sub.indptr)
        for i, c in enumerate(self.sub_chunk):
            self.by_chunk.setdefault(c, []).append(i)
        for rows in self.by_chunk.values():
            rows.sort(key=lambda i: self.sub_ids[i])

    def keyword_order(self, sims: np.ndarray, first: int = 256) -> Iterator[int]:
        """Keyword rows best first (ties by id order), lazily: the top ``first`` are sorted, and
        the next block only when the caller gets that far (a full sort of every keyword per
        question would cost more than the rest of the retrieval)."""
        n = sims.size
        done = np.zeros(n, dtype=bool)
        size = first
        while not done.all():
            rest = np.flatnonzero(~done)
            k = min(size, rest.size)
            part = rest[np.argpartition(-sims[rest], k - 1)[:k]] if k < rest.size else rest
            # every row scoring as high as the k-th joins, so ties are never split across blocks
            part = rest[sims[rest] >= sims[part].min()]
            part = part[np.lexsort((part, -sims[part]))]
            done[part] = True
            yield from part.tolist()
            size *= 4

    def question_keywords(self, words: Iterable[str]) -> list[int]:
        """Rows of the keywords among ``words``, rarest first (fewest sub-chunks), ties by id."""
        rows = {self.word_row[w] for w in words if w in self.word_row}
        return sorted(rows, key=lambda k: (int(self.kw_df[k]), self.kw_ids[k]))

    def bm25(self, kw_rows: list[int], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
        """BM25 of every sub-chunk for a query made of the keywords ``kw_rows`` (Robertson's idf
        log(1 + (n - df + 0.5) / (df + 0.5)), length in tokens). The bipartite graph holds no term
        frequencies, so a keyword counts once per sub-chunk (tf = 1)."""
        n = len(self.sub_ids)
        if not kw_rows or n == 0:
            return np.zeros(n)
        df = self.kw_df[kw_rows].astype(np.float64)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        hits = np.asarray(self.kw_sub[kw_rows].T @ idf).ravel()
        length = self.sub_tokens / max(float(self.sub_tokens.mean()), 1.0)
        return hits * (k1 + 1.0) / (1.0 + k1 * (1.0 - b + b * length))

    def title(self, chunk_id: str) -> str:
        return self.chunk_label.get(chunk_id, " · ").rsplit(" · ", 1)[0]

    def label(self, sub_id: str) -> str:
        """'<document title> · c<chunk ord>.s<sub-chunk ord>'."""
        row = self.sub_index.get(sub_id)
        if row is None:
            return sub_id
        return f"{self.chunk_label.get(self.sub_chunk[row], '?')}.s{sub_id.rsplit('.s', 1)[-1]}"

    def neighbours(self, kw: int) -> np.ndarray:
        return self.kw_sub.indices[self.kw_sub.indptr[kw] : self.kw_sub.indptr[kw + 1]]


def _view(signature: str, parts: ket_view.ViewParts, store: GraphStore) -> KeywordView:
    return KeywordView(signature, parts.kw_ids, parts.kw_words, parts.kw_matrix, parts.kw_sub, parts.sub_ids,
                       parts.sub_chunk, parts.sub_tokens, parts.sub_matrix, chunk_label=_chunk_labels(store))


def _load(store: GraphStore, signature: str) -> KeywordView:
    """The view made from the graph."""
    return _view(signature, ket_view.make_parts(store), store)


def _chunk_labels(store: GraphStore) -> dict[str, str]:
    return {r["id"]: f"{r['title']} · c{r['ord']}" for r in reads.chunk_labels(store)}


def _stored_or_load(store: GraphStore, signature: str) -> KeywordView:
    """The view mapped from the workspace (kgviz.graph.ket_view: the build stores it), else made
    from the graph and stored there (a workspace built before the build stored it, or whose store
    failed; one that cannot be written keeps it in memory only, logged)."""
    key = ket_view.view_key(store, signature)
    parts = ket_view.stored_parts(store, key)
    if parts is not None:
        return _view(signature, parts, store)
    view = _load(store, signature)
    ket_view.store_parts(store, key, ket_view.ViewParts(
        view.kw_ids, view.kw_words, view.kw_matrix, view.kw_sub, view.sub_ids, view.sub_chunk, view.sub_tokens,
        view.sub_matrix))
    return view


def _keyword_signature(store: GraphStore) -> str | None:
    return store.get_meta(META_KEYWORD_SIGNATURE)


def keyword_view(store: GraphStore) -> KeywordView | None:
    """The graph's keyword layer in memory, or None when the graph has none. Its signature is read
    once per database state (``GraphStore.derived``): a comparison asked Meta for it once per KET
    run and channel."""
    signature = store.derived("ket.keyword_signature", _keyword_signature)
    if signature is None:
        return None
    key = _key(store)
    with _LOCK:
        view = _VIEWS.get(key)
        if view is None or view.signature != signature:
            view = _stored_or_load(store, signature)
            _VIEWS[key] = view
        return view


def triple_cosines(store: GraphStore, ids: list[str], qv: np.ndarray) -> dict[str, float]:
    """cos(triple, query) for the ids (0 for a triple without a vector): the unit rows from the
    exact search's vector file (one binary search and a dot product each), else fetched from Kùzu
    and remembered (module docstring)."""
    units = store.unit_vectors("Triple", ids)
    if units is None:
        units = _fetched_units(store, ids)
    return {t: float(units[t] @ qv) if t in units else 0.0 for t in ids}


def _fetched_units(store: GraphStore, ids: list[str]) -> dict[str, np.ndarray]:
    """Unit rows of the ids read from Kùzu, remembered until the number of triples changes (a
    build added some) or the memo holds TRIPLE_MEMO_MAX of them."""
    key = _key(store)
    n = reads.count_nodes(store, "Triple")
    with _LOCK:
        count, memo = _TRIPLES.get(key, (-1, {}))
        if count != n or len(memo) > TRIPLE_MEMO_MAX:
            memo = {}
            _TRIPLES[key] = (n, memo)
    missing = [t for t in dict.fromkeys(ids) if t not in memo]
    if missing:
        fetched = store.get_embeddings("Triple", missing)
        with _LOCK:
            for t, v in fetched.items():
                memo[t] = unit_rows(np.asarray(v, dtype=np.float32)[None, :])[0]
    return {t: memo[t] for t in ids if t in memo}


def _name_key(text: str) -> str:
    return " ".join(_NAME_WORD.findall(text.lower()))


def _name_index(store: GraphStore) -> dict[str, list[str]]:
    """Normalised name or alias -> entity ids."""
    index: dict[str, list[str]] = {}
    t = reads.entity_names_table(store)
    for eid, name, aliases in zip(*(t.column(c).to_pylist() for c in ("id", "name", "aliases"))):
        for n in [name or "", *str(aliases or "").split("|")]:  # aliases are '|'-joined
            k = _name_key(str(n))
            if k and k not in STOPWORDS:
                index.setdefault(k, []).append(eid)
    return index


def named_entities(store: GraphStore, question: str) -> list[str]:
    """Entities whose name (or alias) the question spells out, longest names first, then left to
    right; a name inside a longer one already found is not looked up again, nor is a lone stopword.
    The name index (normalised name -> entity ids) is built once per database state
    (``GraphStore.derived``: it was checked with a count of every entity per question)."""
    index: dict[str, list[str]] = store.derived("ket.name_index", _name_index)
    words = _NAME_WORD.findall(question.lower())
    taken = [False] * len(words)
    found: list[str] = []
    for size in range(min(MAX_NAME_WORDS, len(words)), 0, -1):
        for i in range(len(words) - size + 1):
            if any(taken[i : i + size]):
                continue
            hits = index.get(" ".join(words[i : i + size]))
            if hits:
                taken[i : i + size] = [True] * size
                found += [e for e in sorted(hits) if e not in found]
    return found


def forget(store: GraphStore) -> None:
    """Drop the views of ``store`` (tests; a workspace being deleted)."""
    with _LOCK:
        _VIEWS.pop(_key(store), None)
        _TRIPLES.pop(_key(store), None)
    from kgviz.methods import ket_descriptions

    ket_descriptions.forget(store)
