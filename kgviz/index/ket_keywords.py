"""KET-RAG's text-keyword bipartite graph G_k (paper 004, Algorithm 3 lines 10-15; §5.1 "Graph
Index Construction").

* Every chunk is halved τ times into sub-chunks (``kgviz.ingest.chunking.split_subchunks``):
  SubChunk nodes linked to their chunk by SUB_CHUNK_OF, each with its own embedding (the keyword
  channel ranks sub-chunks by cosine to the query, Algorithm 4 line 3).
* Keywords are the non-stop words of the sub-chunks (§5.1: "tokenizes chunks into words while
  excluding stop words"). A keyword's description is the sentences containing it and its
  embedding the mean of those sentences' embeddings, L2-normalised (Algorithm 3 line 13).
  HAS_KEYWORD links a sub-chunk to every keyword it contains (line 14).

Keeping the keyword set sane (ours; the paper keeps every non-stop word): words shorter than
``min_word_len`` characters are dropped, and so are words found in more than
max(``keyword_max_df`` x #sub-chunks, ``keyword_df_floor``) sub-chunks: such a word ("film",
"american" on HotpotQA) links to hundreds of sub-chunks, so as a seed it would fill the keyword
channel's candidate pool with one unfocused neighbourhood. The floor keeps tiny corpora from
losing every word. Identical sentences (chunk overlap repeats them) count once. A stored
description keeps the first ``description_max_sentences`` sentences (display only; the embedding
uses every sentence).

All counting is sparse matrix algebra (scipy): sentences x words, sub-chunks x sentences, and
their product for sub-chunks x words; keyword embeddings are one sparse x dense product.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from kgviz.index.embed import embed_processes, embed_texts
from kgviz.index.knn import sorted_rows, term_matrix
from kgviz.ingest.chunking import split_subchunks
from kgviz.providers.base import Embedder
from kgviz.providers.embedders import l2_normalise
from kgviz.text import split_sentences
from kgviz.types import Chunk

Progress = Callable[[str, int, int], None]  # (message, done, total)


@dataclass(frozen=True)
class KeywordRules:
    tau: int
    min_word_len: int = 3
    keyword_max_df: float = 0.05
    keyword_df_floor: int = 20
    description_max_sentences: int = 10
    subchunk_tokens: int | None = None  # halve a piece only towards this size (None: always, the paper)


@dataclass
class KeywordLinks:
    """HAS_KEYWORD edges as two index arrays (sub-chunk row, keyword row), sorted by sub-chunk
    then keyword, instead of a dict per edge: at 100,000 passages there are millions of edges, and
    their dicts were most of a gigabyte held while the keyword layer is written (issue 29).
    Iterating gives the edge rows ({"from": sub-chunk id, "to": keyword id}); ``table`` a slice
    of them as the Arrow table the bulk loader takes."""

    sub_ids: list[str] = field(default_factory=list)
    keyword_ids: list[str] = field(default_factory=list)
    sub: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kw: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return int(self.sub.size)

    def __iter__(self) -> Iterator[dict[str, str]]:
        for r, c in zip(self.sub.tolist(), self.kw.tolist()):
            yield {"from": self.sub_ids[r], "to": self.keyword_ids[c]}

    def table(self, start: int, stop: int) -> pa.Table:
        sub, kw = self.sub[start:stop].tolist(), self.kw[start:stop].tolist()
        return pa.table({"from": pa.array([self.sub_ids[r] for r in sub], pa.string()),
                         "to": pa.array([self.keyword_ids[c] for c in kw], pa.string())})


@dataclass
class KeywordLayer:
    """Rows ready for the store's bulk loaders, plus counts for the build report."""

    subchunks: list[dict[str, Any]] = field(default_factory=list)
    sub_chunk_of: list[dict[str, str]] = field(default_factory=list)
    keywords: list[dict[str, Any]] = field(default_factory=list)
    has_keyword: KeywordLinks = field(default_factory=KeywordLinks)
    n_sentences: int = 0
    n_words: int = 0  # distinct non-stop words of length >= min_word_len
    n_dropped_common: int = 0  # words over the document-frequency limit
    df_limit: int = 0

    def stats(self) -> dict[str, int]:
        return {"subchunks": len(self.subchunks), "sentences": self.n_sentences, "words": self.n_words,
                "keywords": len(self.keywords), "dropped_common": self.n_dropped_common,
                "df_limit": self.df_limit, "has_keyword": len(self.has_keyword)}


KEYWORD_BLOCK = 8192  # keyword vectors made at a time (ours)


def df_limit(n_subchunks: int, rules: KeywordRules) -> int:
    return max(int(rules.keyword_df_floor), int(rules.keyword_max_df * n_subchunks))


def build_keyword_layer(chunks: Sequence[tuple[str, str, str]], embedder: Embedder, rules: KeywordRules, *,
                        batch_size: int = 256, progress: Progress | None = None, workers: int = 1) -> KeywordLayer:
    """Sub-chunks and keywords of ``chunks`` given as (chunk id, doc id, text). Pure apart from
    the embedder calls (sub-chunks, then unique sentences; in worker processes when there are
    many, up to ``workers``: kgviz.index.embed)."""
    layer = KeywordLayer()
    for cid, doc_id, text in chunks:
        parent = Chunk(id=cid, doc_id=doc_id, ord=0, text=text, n_tokens=0)
        for sc in split_subchunks(parent, tau=rules.tau, target_tokens=rules.subchunk_tokens):
            layer.subchunks.append({"id": sc.id, "chunk_id": cid, "ord": sc.ord, "text": sc.text,
                                    "n_tokens": sc.n_tokens})
            layer.sub_chunk_of.append({"from": sc.id, "to": cid})
    n_sub = len(layer.subchunks)
    if n_sub == 0:
        return layer

    # sentences (unique), and which sub-chunk holds which sentence
    sentence_index: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for i, sub in enumerate(layer.subchunks):
        for s in split_sentences(sub["text"]):
            j = sentence_index.setdefault(s, len(sentence_index))
            rows.append(i)
            cols.append(j)
    sentences = list(sentence_index)
    layer.n_sentences = len(sentences)
    sub_sent = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n_sub, len(sentences)))
    sub_sent.data[:] = 1.0  # a sentence twice in one sub-chunk still counts once

    sent_word, vocab = term_matrix(sentences, rules.min_word_len)
    layer.n_words = len(vocab)
    sub_word = (sub_sent @ sent_word).tocsc()
    sub_word.data[:] = 1.0
    df = np.diff(sub_word.indptr)
    layer.df_limit = df_limit(n_sub, rules)
    keep = np.flatnonzero((df > 0) & (df <= layer.df_limit))
    layer.n_dropped_common = int(np.count_nonzero(df > layer.df_limit))

    def report(message: str, done: int, total: int) -> None:
        if progress is not None:
            progress(message, done, total)

    with embed_processes(embedder, workers, n_sub + len(sentences)) as pool:  # one start for both
        sub_emb = embed_texts(embedder, [r["text"] for r in layer.subchunks], batch_size,
                              lambda d: report("embedding sub-chunks", d, n_sub), pool=pool)
        for row, vec in zip(layer.subchunks, sub_emb):
            row["emb"] = vec
        sent_emb = embed_texts(embedder, sentences, batch_size,
                               lambda d: report("embedding sentences", d, len(sentences)), pool=pool)

    word_sent = sent_word[:, keep].T.tocsr()  # keyword x sentence
    # sum and mean point the same way; a block of keywords at a time: every row is computed on
    # its own (the same values as one product), and l2_normalise works in float64, so the whole
    # matrix at once was two float64 copies of it (issue 29: ~7 GB at 550k keywords, 100k passages)
    kw_emb = np.empty((len(keep), sent_emb.shape[1]), dtype=np.float32)
    for b0 in range(0, len(keep), KEYWORD_BLOCK):
        kw_emb[b0:b0 + KEYWORD_BLOCK] = l2_normalise(np.asarray(word_sent[b0:b0 + KEYWORD_BLOCK] @ sent_emb))
    del sent_emb  # not read again: the keywords' vectors are made
    n_desc = max(1, rules.description_max_sentences)
    bounds, sent_ids = sorted_rows(word_sent)  # Python ints: one conversion, not one per keyword
    for pos, col in enumerate(keep.tolist()):
        a, b = bounds[pos], bounds[pos + 1]
        desc = " ".join([sentences[j] for j in sent_ids[a: min(b, a + n_desc)]])
        if b - a > n_desc:
            desc += f" [... {b - a - n_desc} more sentences]"
        layer.keywords.append({"id": f"kw:{vocab[col]}", "word": vocab[col], "description": desc,
                               "emb": kw_emb[pos]})

    kept = sub_word[:, keep].tocoo()
    order = np.lexsort((kept.col, kept.row))
    layer.has_keyword = KeywordLinks([r["id"] for r in layer.subchunks], [k["id"] for k in layer.keywords],
                                     kept.row[order].astype(np.int64), kept.col[order].astype(np.int64))
    return layer
