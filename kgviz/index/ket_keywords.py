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

How the layer is held until it is written (ours; issue 29, 550k keywords at 100k passages): the
keyword and sub-chunk vectors once, in blocks, sparse where that is smaller (``VectorBlocks``);
the node rows as columns, each COPY batch's Arrow table (descriptions, dense vectors) made only
when it is loaded (``KeywordRows``, ``SubChunkRows``). The build then makes KET-RAG's keyword
view from this layer (kgviz.index.ket_build) instead of reading it back out of the graph.

A sub-chunk that is its whole chunk (not halved: most chunks of a short-passage corpus) has the
text the knn stage already embedded for that chunk; with an embedder whose row depends on its
text alone, the chunk's vector is that sub-chunk's, bit for bit, so it is taken (``KnownVectors``,
read from the build's spill) instead of embedded again (ours; issue 29: about half the characters
this layer embedded at 10k passages).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, overload

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from kgviz.errors import BuildError
from kgviz.index.embed import embed_processes, embed_texts, rows_depend_on_text_alone
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


HOLD_SPARSE_BELOW = 0.5  # ours: a block held as CSR (4-byte value + 4-byte column) below half non-zero


class VectorBlocks:
    """The rows of a float32 matrix, held as the blocks they were made in (``block_rows`` rows
    each, the last shorter), each block as CSR when that is smaller (hashing keyword vectors are
    ~16% non-zero: a third of the dense matrix, 1.7 GB at 550k keywords, 100k passages; issue 29)
    or dense. The values are the same bits either way; rows come back dense, a batch at a time."""

    def __init__(self, dim: int, block_rows: int) -> None:
        self.dim, self.block_rows = dim, block_rows
        self.blocks: list[Any] = []
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def append(self, block: np.ndarray) -> None:
        if self.blocks and self.blocks[-1].shape[0] != self.block_rows:
            raise ValueError("only the last block of VectorBlocks may be short")
        # CSR keeps no zero, so a -0.0 would come back +0.0: such a block stays dense (same bits)
        small = (np.count_nonzero(block) < HOLD_SPARSE_BELOW * block.size
                 and not np.any(np.signbit(block) & (block == 0)))
        self.blocks.append(sp.csr_matrix(block) if small else np.ascontiguousarray(block, dtype=np.float32))
        self.n += block.shape[0]

    def drop_before(self, stop: int) -> bool:
        """Let go of every block whose rows all come before ``stop`` (their rows are read for the
        last time); whether any was. Asking for a dropped row is a ValueError."""
        dropped = False
        for b in range(min(stop // self.block_rows, len(self.blocks))):
            if self.blocks[b] is not None:
                self.blocks[b], dropped = None, True
        return dropped

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The rows at ``positions`` (any order), dense float32."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty((positions.size, self.dim), dtype=np.float32)
        which = positions // self.block_rows
        for b in np.unique(which).tolist():
            at = np.flatnonzero(which == b)
            block = self.blocks[b]
            if block is None:
                raise ValueError(f"rows {b * self.block_rows}..{(b + 1) * self.block_rows - 1} were let go")
            local = positions[at] - b * self.block_rows
            out[at] = block[local].toarray() if sp.issparse(block) else block[local]
        return out

    def rows(self, start: int, stop: int) -> np.ndarray:
        return self.take(np.arange(start, min(stop, self.n), dtype=np.int64))

    def nbytes(self) -> int:
        return sum(b.data.nbytes + b.indices.nbytes + b.indptr.nbytes if sp.issparse(b) else b.nbytes
                   for b in self.blocks if b is not None)

    def matrix(self) -> np.ndarray | sp.csr_matrix:
        """Every row as one matrix: CSR when every block is held sparse, else dense float32. A
        sparse matrix times it gives the bits it gives times the dense rows (each product adds
        the same non-zero terms in the same order; a zero term adds nothing)."""
        if self.blocks and all(sp.issparse(b) for b in self.blocks):
            return sp.vstack(self.blocks, format="csr", dtype=np.float32)
        if not self.blocks:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([b.toarray() if sp.issparse(b) else b for b in self.blocks])


def embed_blocks(embedder: Embedder, texts: Sequence[str], batch_size: int, on_batch: Callable[[int], None],
                 pool: Any) -> VectorBlocks:
    """``embed_texts`` of ``texts`` held as ``VectorBlocks`` as they are made: a block of rows is
    embedded, then held (sparse when smaller), so the whole dense matrix never is (issue 29: with
    the sentences' vectors held dense the keyword vectors were made ~0.9 GB higher at 100k
    passages). A block is a whole number of batches, so the embedder sees the batches of one call
    over all the texts."""
    rows = max(1, -(-KEYWORD_BLOCK // batch_size)) * batch_size
    out = VectorBlocks(int(embedder.dim), rows)
    for b0 in range(0, len(texts), rows):
        out.append(embed_texts(embedder, texts[b0:b0 + rows], batch_size, _after(on_batch, b0), pool=pool))
    return out


def _after(on_batch: Callable[[int], None], before: int) -> Callable[[int], None]:
    """``on_batch`` of a block whose first row is row ``before`` of all the texts."""
    return lambda done: on_batch(before + done)


def vector_column(matrix: np.ndarray) -> pa.FixedSizeListArray:
    """A FLOAT[dim] Arrow column on ``matrix``'s float32 rows, not a copy of them (a dict per row
    was stacked into a second copy by the bulk loader: 400 MB for 131k rows of 768 floats)."""
    flat = np.ascontiguousarray(matrix, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), flat.shape[1])


class _BatchRows(Sequence[dict[str, Any]]):
    """Rows held as columns and made when read, a batch at a time (``_rows(start, stop)``):
    indexing, consecutive slices and iteration, ``_block()`` rows at a time."""

    def _rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _block(self) -> int:
        return KEYWORD_BLOCK

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError(f"{type(self).__name__} slices are consecutive rows")
            return self._rows(start, max(start, stop))
        pos = range(len(self))[i]
        return self._rows(pos, pos + 1)[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, len(self), self._block()):
            yield from self._rows(start, min(start + self._block(), len(self)))


class KeywordRows(_BatchRows):
    """The Keyword node rows ({"id", "word", "description", "emb"}), made when read: a batch's
    descriptions and dense vectors exist only while that batch is loaded (issue 29: every row
    made up front held 550k descriptions and the dense keyword matrix through the COPYs). A
    description is the keyword's first ``max_sentences`` sentences in sentence order."""

    def __init__(self, ids: list[str], words: list[str], vectors: VectorBlocks, word_sent: sp.csr_matrix,
                 sentences: list[str], max_sentences: int) -> None:
        self.ids, self.words, self.vectors = ids, words, vectors
        self.word_sent: sp.csr_matrix | None = word_sent
        self.sentences: list[str] | None = sentences
        self.max_sentences = max(1, max_sentences)

    def __len__(self) -> int:
        return len(self.ids)

    def descriptions(self, start: int, stop: int) -> list[str]:
        """The descriptions of rows ``start:stop`` (one sorted conversion of the batch's
        keyword x sentence rows, not one sort per keyword: kgviz.index.knn.sorted_rows)."""
        if self.word_sent is None or self.sentences is None:
            raise BuildError("the keywords' descriptions were let go once their rows were written")
        bounds, sent_ids = sorted_rows(self.word_sent[start:stop])
        n, out = self.max_sentences, []
        for pos in range(stop - start):
            a, b = bounds[pos], bounds[pos + 1]
            desc = " ".join([self.sentences[j] for j in sent_ids[a: min(b, a + n)]])
            if b - a > n:
                desc += f" [... {b - a - n} more sentences]"
            out.append(desc)
        return out

    def description(self, pos: int) -> str:
        return self.descriptions(pos, pos + 1)[0]

    def release_descriptions(self) -> None:
        """Let the sentences and the keyword x sentence matrix go (the rows are written: issue
        29, ~0.4M sentences at 100k passages held through the view's making); a description
        asked for after this is a BuildError."""
        self.word_sent, self.sentences = None, None

    def _rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        emb = self.vectors.rows(start, stop)
        return [{"id": self.ids[p], "word": self.words[p], "description": d, "emb": emb[p - start]}
                for p, d in zip(range(start, stop), self.descriptions(start, stop))]

    def table(self, start: int, stop: int, *, vectors: bool = True) -> pa.Table:
        """Rows ``start:stop`` as the Arrow table the bulk loader takes (the values of ``_rows``;
        without "emb" unless ``vectors``)."""
        stop = min(stop, len(self))
        columns = {"id": pa.array(self.ids[start:stop], pa.string()),
                   "word": pa.array(self.words[start:stop], pa.string()),
                   "description": pa.array(self.descriptions(start, stop), pa.string())}
        if vectors:
            columns["emb"] = vector_column(self.vectors.rows(start, stop))
        return pa.table(columns)

    def _block(self) -> int:
        return self.vectors.block_rows


class SubChunkRows(_BatchRows):
    """The SubChunk node rows ({"id", "chunk_id", "ord", "text", "n_tokens", "emb"}; "emb" once
    the vectors are made), held as columns and made when read, a batch at a time; ``parents``
    gives SUB_CHUNK_OF's edges as the Arrow table the bulk loader takes. The texts are let go
    once the rows are written (``release_texts``): nothing after the SubChunk COPY reads them."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.chunk_ids: list[str] = []
        self.ords: list[int] = []
        self.texts: list[str] | None = []
        self.n_tokens: list[int] = []
        self.vectors: VectorBlocks | None = None

    def append(self, sub_id: str, chunk_id: str, ord_: int, text: str, n_tokens: int) -> None:
        assert self.texts is not None
        self.ids.append(sub_id)
        self.chunk_ids.append(chunk_id)
        self.ords.append(ord_)
        self.texts.append(text)
        self.n_tokens.append(n_tokens)

    def __len__(self) -> int:
        return len(self.ids)

    def release_texts(self) -> None:
        self.texts = None

    def _rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        if self.texts is None:
            raise BuildError("the sub-chunks' texts were let go once they were written",
                             hint="read the sub-chunk rows before write_keyword_layer")
        emb = self.vectors.rows(start, stop) if self.vectors is not None else None
        out: list[dict[str, Any]] = []
        for p in range(start, stop):
            row = {"id": self.ids[p], "chunk_id": self.chunk_ids[p], "ord": self.ords[p], "text": self.texts[p],
                   "n_tokens": self.n_tokens[p]}
            if emb is not None:
                row["emb"] = emb[p - start]
            out.append(row)
        return out

    def table(self, start: int, stop: int, *, vectors: bool = True) -> pa.Table:
        """Rows ``start:stop`` as the Arrow table the bulk loader takes (the values of ``_rows``;
        without "emb" unless ``vectors``)."""
        if self.texts is None or self.vectors is None:
            raise BuildError("the sub-chunks have no texts or no vectors to write")
        stop = min(stop, len(self))
        columns = {"id": pa.array(self.ids[start:stop], pa.string()),
                   "chunk_id": pa.array(self.chunk_ids[start:stop], pa.string()),
                   "ord": pa.array(self.ords[start:stop], pa.int64()),
                   "text": pa.array(self.texts[start:stop], pa.string()),
                   "n_tokens": pa.array(self.n_tokens[start:stop], pa.int64())}
        if vectors:
            columns["emb"] = vector_column(self.vectors.rows(start, stop))
        return pa.table(columns)

    def parents(self, start: int, stop: int) -> pa.Table:
        """SUB_CHUNK_OF edges ``start:stop``: {"from": sub-chunk id, "to": chunk id}."""
        return pa.table({"from": pa.array(self.ids[start:stop], pa.string()),
                         "to": pa.array(self.chunk_ids[start:stop], pa.string())})


def _no_keywords() -> KeywordRows:
    return KeywordRows([], [], VectorBlocks(0, 1), sp.csr_matrix((0, 0), dtype=np.float32), [], 1)


@dataclass
class KeywordLayer:
    """Rows ready for the store's bulk loaders (made a batch at a time as they are read), plus
    counts for the build report."""

    subchunks: SubChunkRows = field(default_factory=SubChunkRows)
    keywords: KeywordRows = field(default_factory=_no_keywords)
    has_keyword: KeywordLinks = field(default_factory=KeywordLinks)
    n_sentences: int = 0
    n_words: int = 0  # distinct non-stop words of length >= min_word_len
    n_dropped_common: int = 0  # words over the document-frequency limit
    df_limit: int = 0
    n_reused: int = 0  # sub-chunks that took their chunk's vector (``KnownVectors``) instead of being embedded

    def stats(self) -> dict[str, int]:
        return {"subchunks": len(self.subchunks), "sentences": self.n_sentences, "words": self.n_words,
                "keywords": len(self.keywords), "dropped_common": self.n_dropped_common,
                "df_limit": self.df_limit, "has_keyword": len(self.has_keyword), "subchunks_reused": self.n_reused}


KEYWORD_BLOCK = 8192  # keyword vectors made at a time (ours)


@dataclass(frozen=True)
class KnownVectors:
    """Vectors the build already made with the layer's embedder: row ``i`` was embedded from
    exactly ``texts[i]``; ``row_of`` gives a chunk id's row and ``take(rows)`` those rows (read
    on demand, e.g. from the build's spill)."""

    row_of: dict[str, int]
    texts: Sequence[str]
    take: Callable[[np.ndarray], np.ndarray]


def subchunk_vectors(embedder: Embedder, texts: Sequence[str], known_rows: np.ndarray, known: KnownVectors | None,
                     batch_size: int, on_batch: Callable[[int], None], pool: Any) -> VectorBlocks:
    """The sub-chunks' vectors as ``VectorBlocks``: sub-chunk ``i`` takes row ``known_rows[i]``
    of ``known`` when that is >= 0 (its text is the one that row was embedded from), and is
    embedded otherwise. Only the embedded rows are held whole; known rows are read a block at a
    time."""
    dim = int(embedder.dim)
    fresh_at = np.flatnonzero(known_rows < 0)
    fresh = embed_blocks(embedder, [texts[i] for i in fresh_at.tolist()], batch_size, on_batch, pool)
    fresh_row = np.full(len(texts), -1, dtype=np.int64)
    fresh_row[fresh_at] = np.arange(fresh_at.size, dtype=np.int64)
    vectors = VectorBlocks(dim, KEYWORD_BLOCK)
    for b0 in range(0, len(texts), KEYWORD_BLOCK):
        rows = known_rows[b0:b0 + KEYWORD_BLOCK]
        block = np.empty((rows.size, dim), dtype=np.float32)
        embedded = rows < 0
        block[embedded] = fresh.take(fresh_row[b0:b0 + KEYWORD_BLOCK][embedded])
        if known is not None and not embedded.all():
            block[~embedded] = known.take(rows[~embedded])
        vectors.append(block)
    return vectors


def df_limit(n_subchunks: int, rules: KeywordRules) -> int:
    return max(int(rules.keyword_df_floor), int(rules.keyword_max_df * n_subchunks))


def build_keyword_layer(chunks: Sequence[tuple[str, str, str]], embedder: Embedder, rules: KeywordRules, *,
                        batch_size: int = 256, progress: Progress | None = None, workers: int = 1,
                        known: KnownVectors | None = None) -> KeywordLayer:
    """Sub-chunks and keywords of ``chunks`` given as (chunk id, doc id, text). Pure apart from
    the embedder calls (sub-chunks, then unique sentences; in worker processes when there are
    many, up to ``workers``: kgviz.index.embed). A sub-chunk whose text is exactly the text a
    ``known`` vector of its chunk was embedded from takes that vector instead of being embedded,
    when the embedder's rows depend on their text alone (the same vector, bit for bit)."""
    if known is not None and not rows_depend_on_text_alone(embedder):
        known = None
    layer = KeywordLayer()
    known_rows: list[int] = []  # per sub-chunk: its row of ``known``, or -1 (embedded)
    for cid, doc_id, text in chunks:
        parent = Chunk(id=cid, doc_id=doc_id, ord=0, text=text, n_tokens=0)
        row = known.row_of.get(cid, -1) if known is not None else -1
        for sc in split_subchunks(parent, tau=rules.tau, target_tokens=rules.subchunk_tokens):
            layer.subchunks.append(sc.id, cid, sc.ord, sc.text, sc.n_tokens)
            known_rows.append(row if known is not None and row >= 0 and sc.text == known.texts[row] else -1)
    n_sub = len(layer.subchunks)
    if n_sub == 0:
        return layer

    # sentences (unique), and which sub-chunk holds which sentence
    sentence_index: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    sub_texts = layer.subchunks.texts
    assert sub_texts is not None
    for i, text in enumerate(sub_texts):
        for s in split_sentences(text):
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
    # the keywords in id order ("kw:" + word: the words' code point order), the order KET's keyword
    # view holds them in, so the view reads their vectors in order and lets each block go once
    # read (kgviz.graph.ket_view.unit_blocks: issue 29, the ket stage's peak)
    keep = keep[sorted(range(keep.size), key=lambda i: vocab[int(keep[i])])]
    layer.n_dropped_common = int(np.count_nonzero(df > layer.df_limit))

    def report(message: str, done: int, total: int) -> None:
        if progress is not None:
            progress(message, done, total)

    reuse = np.asarray(known_rows, dtype=np.int64)
    del known_rows
    layer.n_reused = int(np.count_nonzero(reuse >= 0))
    n_embed = n_sub - layer.n_reused
    with embed_processes(embedder, workers, n_embed + len(sentences)) as pool:  # one start for both
        # held once, as blocks (sparse where that is smaller)
        layer.subchunks.vectors = subchunk_vectors(embedder, sub_texts, reuse, known, batch_size,
                                                   lambda d: report("embedding sub-chunks", d, n_embed), pool)
        sent_blocks = embed_blocks(embedder, sentences, batch_size,
                                   lambda d: report("embedding sentences", d, len(sentences)), pool)
    sent_emb = sent_blocks.matrix()  # sparse for hashing vectors: the product below gives the same bits
    del sent_blocks

    word_sent = sent_word[:, keep].T.tocsr()  # keyword x sentence
    # sum and mean point the same way; a block of keywords at a time: every row is computed on
    # its own (the same values as one product), and l2_normalise works in float64, so the whole
    # matrix at once was two float64 copies of it (issue 29: ~7 GB at 550k keywords, 100k passages).
    # Each block is held as made, sparse when that is smaller (VectorBlocks)
    kw_emb = VectorBlocks(sent_emb.shape[1], KEYWORD_BLOCK)
    for b0 in range(0, len(keep), KEYWORD_BLOCK):
        product = word_sent[b0:b0 + KEYWORD_BLOCK] @ sent_emb
        kw_emb.append(l2_normalise(product.toarray() if sp.issparse(product) else np.asarray(product)))
    del sent_emb  # not read again: the keywords' vectors are made
    words = [vocab[col] for col in keep.tolist()]
    ids = [f"kw:{w}" for w in words]
    layer.keywords = KeywordRows(ids, words, kw_emb, word_sent, sentences, rules.description_max_sentences)

    kept = sub_word[:, keep].tocoo()
    order = np.lexsort((kept.col, kept.row))
    layer.has_keyword = KeywordLinks(layer.subchunks.ids, ids,
                                     kept.row[order].astype(np.int64), kept.col[order].astype(np.int64))
    return layer
