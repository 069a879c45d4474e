from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kgviz.errors import ConfigError
from kgviz.ingest import (
    chunk_document,
    chunk_documents,
    chunk_spans,
    document_from_text,
    split_subchunks,
    subchunk_spans,
    total_tokens,
)
from kgviz.text import count_tokens, split_sentences
from kgviz.types import Chunk, Document

FAST = settings(max_examples=80, deadline=None)


def doc(text: str) -> Document:
    return document_from_text(text, title="t", source="mem")


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def numbered_sentences(n: int, words: int = 9) -> str:
    # Each sentence: "S<i> w w ... w." -> words + 2 tokens (label, words, period).
    return " ".join(f"S{i} " + " ".join(["word"] * (words - 1)) + "." for i in range(n))


def test_ids_ords_and_fields() -> None:
    d = doc(numbered_sentences(40))
    chunks = chunk_document(d, chunk_tokens=50, overlap=10)
    assert [c.id for c in chunks] == [f"{d.id}#c{i}" for i in range(len(chunks))]
    assert [c.ord for c in chunks] == list(range(len(chunks)))
    assert all(c.doc_id == d.id and c.level == 0 and c.parent_id == "" for c in chunks)
    assert all(c.n_tokens == count_tokens(c.text) for c in chunks)


def test_chunks_pack_whole_sentences_within_budget() -> None:
    d = doc(numbered_sentences(40))  # 10 tokens per sentence
    chunks = chunk_document(d, chunk_tokens=50, overlap=0)
    assert [c.n_tokens for c in chunks] == [50] * 8
    for c in chunks:
        assert c.text.startswith("S") and c.text.endswith(".")
        assert all(s.startswith("S") for s in split_sentences(c.text))
    assert " ".join(c.text for c in chunks) == d.text


def test_overlap_carries_trailing_sentences() -> None:
    d = doc(numbered_sentences(40))
    chunks = chunk_document(d, chunk_tokens=50, overlap=25)
    for prev, cur in zip(chunks, chunks[1:]):
        prev_s, cur_s = split_sentences(prev.text), split_sentences(cur.text)
        # 25 tokens of overlap fit two 10-token sentences.
        assert cur_s[:2] == prev_s[-2:]
        assert cur_s[2] not in prev_s
    assert all(c.n_tokens <= 50 for c in chunks)
    # every sentence of the document appears in some chunk
    joined = " ".join(c.text for c in chunks)
    assert all(s in joined for s in split_sentences(d.text))


def test_overlap_never_swallows_a_whole_previous_chunk() -> None:
    d = doc(numbered_sentences(6))
    chunks = chunk_document(d, chunk_tokens=10, overlap=9)  # each chunk is one sentence
    assert [c.text[:2] for c in chunks] == ["S0", "S1", "S2", "S3", "S4", "S5"]


def test_overlap_dropped_when_it_leaves_no_room() -> None:
    short = "Tiny one."  # 3 tokens
    long = "L " + " ".join(["word"] * 17) + "."  # 19 tokens
    d = doc(f"{short} {short} {long}")
    chunks = chunk_document(d, chunk_tokens=20, overlap=5)
    assert chunks[-1].text == long


def test_long_sentence_is_split_by_tokens_at_word_boundaries() -> None:
    words = [f"w{i}" for i in range(250)]
    d = doc("Intro sentence. " + " ".join(words) + " end. Outro sentence.")
    chunks = chunk_document(d, chunk_tokens=60, overlap=0)
    assert all(c.n_tokens <= 60 for c in chunks)
    assert squash("".join(c.text for c in chunks)) == squash(d.text)
    # cuts between words, never inside "w123"
    for c in chunks:
        assert re.fullmatch(r"\S.*\S", c.text, re.DOTALL)
    pieces = [c.n_tokens for c in chunks]
    assert max(pieces) - min(p for p in pieces if p > 5) <= 12  # near-equal pieces


def test_single_huge_word_is_split_into_token_pieces() -> None:
    d = doc("x" * 600)  # one "word" of 100 six-character pieces
    chunks = chunk_document(d, chunk_tokens=30, overlap=5)
    assert all(c.n_tokens <= 30 for c in chunks)
    assert "".join(c.text for c in chunks) == d.text


def test_chunk_text_is_a_slice_keeping_line_breaks() -> None:
    d = doc("Para one.\nStill one.\n\nPara two.")
    [c] = chunk_document(d, chunk_tokens=100, overlap=0)
    assert c.text == d.text


def test_deterministic_and_chunk_documents() -> None:
    docs = [doc(numbered_sentences(30)), doc("Another doc. Short.")]
    a = chunk_documents(docs, chunk_tokens=40, overlap=10)
    b = chunk_documents(docs, chunk_tokens=40, overlap=10)
    assert a == b
    assert {c.doc_id for c in a} == {d.id for d in docs}
    assert total_tokens(a) == sum(c.n_tokens for c in a) > 0


def test_empty_document_gives_no_chunks() -> None:
    assert chunk_document(Document("doc:x", "t", "s", "0", ""), chunk_tokens=10, overlap=0) == []


@pytest.mark.parametrize("size, overlap", [(0, 0), (10, 10), (10, -1), (5, 7)])
def test_bad_sizes(size: int, overlap: int) -> None:
    with pytest.raises(ConfigError):
        chunk_document(doc("Hello."), chunk_tokens=size, overlap=overlap)


words = st.sampled_from(
    ["the", "Cat", "sat.", "Dr.", "3.5", "internationalization", "a,", "Bob!", "\n\n", "x" * 40]
    + ["é"]
)


@FAST
@given(
    st.lists(words, min_size=1, max_size=120).map(" ".join),
    st.integers(min_value=1, max_value=40),
    st.data(),
)
def test_chunking_properties(text: str, size: int, data: st.DataObject) -> None:
    assume(text.strip())
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    d = doc(text)
    chunks = chunk_document(d, chunk_tokens=size, overlap=overlap)
    assert all(0 < c.n_tokens <= size for c in chunks)
    spans = chunk_spans(d.text, chunk_tokens=size, overlap=overlap)
    assert [d.text[a:b] for a, b in spans] == [c.text for c in chunks]
    # Chunks start strictly later each time, cover every non-space character and, without
    # overlap, never overlap each other.
    assert all(spans[i][0] < spans[i + 1][0] for i in range(len(spans) - 1))
    covered = set().union(*(range(a, b) for a, b in spans))
    assert all(i in covered for i, ch in enumerate(d.text) if not ch.isspace())
    if overlap == 0:
        assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))


# --- sub-chunks (KET-RAG tau) ------------------------------------------------------------------
def one_chunk(text: str) -> Chunk:
    [c] = chunk_document(doc(text), chunk_tokens=10_000, overlap=0)
    return c


@pytest.mark.parametrize("tau", [0, 1, 2, 3])
def test_subchunk_count_is_two_to_the_tau(tau: int) -> None:
    c = one_chunk(numbered_sentences(16))
    subs = split_subchunks(c, tau=tau)
    assert len(subs) == 2**tau
    assert [s.id for s in subs] == [f"{c.id}.s{i}" for i in range(2**tau)]
    assert all(s.level == 1 and s.parent_id == c.id and s.doc_id == c.doc_id for s in subs)
    assert [s.ord for s in subs] == list(range(2**tau))
    assert " ".join(s.text for s in subs) == c.text
    # 16 equal sentences: the pieces are sentence-aligned and equal-sized
    assert len({s.n_tokens for s in subs}) == 1
    assert all(s.text.startswith("S") and s.text.endswith(".") for s in subs)
    assert total_tokens(subs) == c.n_tokens


def test_subchunks_prefer_sentence_boundaries_near_the_middle() -> None:
    c = one_chunk("Alpha beta gamma. Delta epsilon zeta eta. Theta iota. Kappa lambda mu.")
    left, right = split_subchunks(c, tau=1)
    assert left.text == "Alpha beta gamma. Delta epsilon zeta eta."
    assert right.text == "Theta iota. Kappa lambda mu."


def test_uneven_sentences_fall_back_to_a_token_cut() -> None:
    long = " ".join(f"w{i}" for i in range(40)) + "."
    c = one_chunk(f"Hi. {long}")
    left, right = split_subchunks(c, tau=1)
    assert abs(left.n_tokens - right.n_tokens) <= 2
    assert squash(left.text + right.text) == squash(c.text)


def test_short_chunk_yields_fewer_pieces() -> None:
    c = one_chunk("Yes.")  # two tokens
    subs = split_subchunks(c, tau=3)
    assert [s.text for s in subs] == ["Yes", "."]


def test_a_target_size_stops_halving_pieces_already_near_it() -> None:
    c = one_chunk(numbered_sentences(16))
    n = c.n_tokens
    assert len(split_subchunks(c, tau=2, target_tokens=n)) == 1  # the chunk is the target size: kept whole
    # target n/2: the chunk is halved once (n > 4/3 · n/2); its halves are at the target, so they stay
    halves = split_subchunks(c, tau=3, target_tokens=n // 2)
    assert len(halves) == 2 and " ".join(s.text for s in halves) == c.text
    assert len(split_subchunks(c, tau=3, target_tokens=None)) == 8  # None: the paper's τ halvings


def test_ket_keyword_rules_carry_the_target_only_for_the_automatic_tau() -> None:
    from kgviz.index.ket import SUBCHUNK_TARGET_TOKENS, KetParams

    assert KetParams().keyword_rules(300).subchunk_tokens == SUBCHUNK_TARGET_TOKENS
    assert KetParams(tau=1).keyword_rules(300).subchunk_tokens is None  # an explicit τ halves τ times


def test_subchunk_rejects_bad_tau_and_subchunks() -> None:
    c = one_chunk("Some text here.")
    with pytest.raises(ConfigError):
        split_subchunks(c, tau=-1)
    with pytest.raises(ConfigError):
        split_subchunks(split_subchunks(c, tau=1)[0], tau=1)


@FAST
@given(st.lists(words, min_size=1, max_size=80).map(" ".join), st.integers(0, 4))
def test_subchunks_cover_the_chunk(text: str, tau: int) -> None:
    assume(text.strip())
    c = one_chunk(text)
    subs = split_subchunks(c, tau=tau)
    assert 1 <= len(subs) <= 2**tau
    if c.n_tokens >= 4**tau:  # every halving leaves each side at least a quarter
        assert len(subs) == 2**tau
    spans = subchunk_spans(c.text, tau=tau)
    assert [c.text[a:b] for a, b in spans] == [s.text for s in subs]
    # Contiguous pieces with only whitespace between them: together they are the chunk.
    assert spans[0][0] == 0 and spans[-1][1] == len(c.text)
    assert all(c.text[spans[i][1] : spans[i + 1][0]].strip() == "" for i in range(len(spans) - 1))
    assert sum(s.n_tokens for s in subs) <= c.n_tokens
