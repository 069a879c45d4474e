"""A sub-chunk that is its whole chunk takes the chunk's vector the build already made instead of
being embedded again (kgviz.index.ket_keywords.KnownVectors; issue 29), only where that is the
same vector: the same embedder, exactly the same text, and an embedder whose rows depend on their
text alone."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

from kgviz.graph.store import GraphStore
from kgviz.index.ket_keywords import KeywordRules, KnownVectors, build_keyword_layer
from kgviz.providers.embedders import HashingEmbedder

SHORT = [(f"d{i}#c0", f"d{i}", f"Marta Ruiz{i} designed the harbour library of town{i}. It opened in {1990 + i}.")
         for i in range(6)]
LONG = [(f"e{i}#c0", f"e{i}", " ".join(f"Sentence {j} of the long chunk {i} names river{j} and castle{i}."
                                       for j in range(40))) for i in range(2)]
CHUNKS = SHORT + LONG
RULES = KeywordRules(tau=2, subchunk_tokens=150, keyword_df_floor=100)


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, remembering every text it was asked to embed."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


class BatchDependent(CountingEmbedder):
    """Says its rows may depend on the batch (as a neural embedder's padded batches may)."""

    rows_depend_on_text_alone = False


def known_for(texts: list[str], ids: list[str]) -> KnownVectors:
    vectors = HashingEmbedder(64).embed(texts)
    return KnownVectors({cid: i for i, cid in enumerate(ids)}, texts, lambda rows: vectors[rows])


def dense(layer: object) -> np.ndarray:
    vectors = layer.subchunks.vectors  # type: ignore[attr-defined]
    return vectors.rows(0, len(vectors))


def test_whole_chunk_subchunks_take_the_known_vectors_and_are_not_embedded() -> None:
    plain = build_keyword_layer(CHUNKS, CountingEmbedder(), RULES)
    emb = CountingEmbedder()
    known = known_for([t for _, _, t in CHUNKS], [c for c, _, _ in CHUNKS])
    layer = build_keyword_layer(CHUNKS, emb, RULES, known=known)
    subs = list(zip(layer.subchunks.chunk_ids, layer.subchunks.texts or []))
    whole = [t for cid, t in subs if t == dict((c, x) for c, _, x in CHUNKS)[cid]]
    assert len(whole) == len(SHORT) == layer.n_reused and len(subs) > len(SHORT)  # the long chunks are halved
    assert not set(whole) & set(emb.seen)  # never sent to the embedder
    assert [t for cid, t in subs if t not in whole] == [t for t in emb.seen if t in {x for _, x in subs}]
    assert np.array_equal(dense(layer), dense(plain))  # the same vectors, bit for bit
    assert np.array_equal(layer.keywords.vectors.rows(0, len(layer.keywords)),
                          plain.keywords.vectors.rows(0, len(plain.keywords)))


def test_a_text_that_differs_from_the_known_one_is_embedded() -> None:
    texts = [t for _, _, t in CHUNKS]
    texts[0] = "  " + texts[0]  # embedded from another text (not stripped): another vector
    texts[1] = "Title\n" + texts[1]  # a prefix
    emb = CountingEmbedder()
    layer = build_keyword_layer(CHUNKS, emb, RULES, known=known_for(texts, [c for c, _, _ in CHUNKS]))
    assert layer.n_reused == len(SHORT) - 2
    assert SHORT[0][2] in emb.seen and SHORT[1][2] in emb.seen and SHORT[2][2] not in emb.seen
    assert np.array_equal(dense(layer), dense(build_keyword_layer(CHUNKS, CountingEmbedder(), RULES)))


def test_no_reuse_when_rows_may_depend_on_the_batch() -> None:
    emb = BatchDependent()
    layer = build_keyword_layer(CHUNKS, emb, RULES,
                                known=known_for([t for _, _, t in CHUNKS], [c for c, _, _ in CHUNKS]))
    assert layer.n_reused == 0 and all(t in emb.seen for _, _, t in SHORT)


def test_a_build_sends_no_whole_chunk_subchunk_to_the_embedder(tmp_path: Path) -> None:
    """In a build the new chunks' vectors are read back from the spill (the knn stage embedded
    them): the ket stage embeds each chunk's text once in all, and stores the vectors it would
    have made."""
    from kgviz.index import ket_keywords
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.ingest import document_from_text
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    docs = [document_from_text(t, title=f"Doc {c}", source=f"{c}.txt") for c, _, t in CHUNKS]
    layers: list[ket_keywords.KeywordLayer] = []
    original = ket_keywords.build_keyword_layer

    made: list[np.ndarray] = []

    def spy(*args: object, **kwargs: object) -> ket_keywords.KeywordLayer:
        layers.append(original(*args, **kwargs))  # type: ignore[arg-type]
        vectors = layers[-1].subchunks.vectors  # as made (the build lets them go once its view is made)
        assert vectors is not None
        made.append(vectors.rows(0, len(layers[-1].subchunks)))
        return layers[-1]

    emb = CountingEmbedder()
    store = GraphStore.open(tmp_path / "g", emb.id, emb.dim)
    mp = pytest.MonkeyPatch()
    with mp.context() as m:
        m.setattr("kgviz.index.ket.build_keyword_layer", spy)
        build(docs, store, Reasoner(OfflineLLM(), emb), BuildParams(workers=1))
    layer = layers[0]
    chunk_texts = [r["text"] for r in store.query("MATCH (c:Chunk) RETURN c.text AS text")]
    whole = store.query("MATCH (s:SubChunk)-[:SUB_CHUNK_OF]->(c:Chunk) WHERE s.text = c.text RETURN s.id AS id")
    assert layer.n_reused == len(whole) == len(SHORT) < len(chunk_texts)  # the long documents' chunks are halved
    for text in chunk_texts:
        assert emb.seen.count(text) == 1  # the knn stage's call only
    # the layer's vectors (kept in KET's keyword view, not in the graph: kgviz.graph.ket_view)
    texts = {r["id"]: r["text"] for r in store.query("MATCH (s:SubChunk) RETURN s.id AS id, s.text AS text")}
    subs = layer.subchunks
    assert sorted(subs.ids) == sorted(texts)
    assert np.array_equal(made[0], HashingEmbedder(64).embed([texts[i] for i in subs.ids]))
    assert subs.vectors is None  # let go once KET's keyword view was made
    store.close()
