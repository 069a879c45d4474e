"""Split documents into sentence-aligned token chunks, and chunks into KET-RAG sub-chunks.

All sizes use the approximate tokenizer in kgviz.text, so chunking is offline and deterministic.
Chunk and sub-chunk texts are exact slices of the text they came from (line breaks kept), which
is what lets the UI highlight a chunk inside its document.

Work happens in token-index space: a piece of text is a range [lo, hi) of token indices, and
its text runs from the start of token lo to the end of token hi-1.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from typing import Iterable, Sequence

from kgviz.errors import ConfigError
from kgviz.text import count_tokens, sentence_spans, token_spans
from kgviz.types import Chunk, Document

Span = tuple[int, int]


def _is_word_char(ch: str) -> bool:  # what the tokenizer's \w matches
    return ch.isalnum() or ch == "_"


def _cut_quality(text: str, tokens: Sequence[Span], k: int) -> int:
    """How clean a cut before token k is: 2 at whitespace, 1 next to punctuation, 0 inside a
    word (a long word is several tokens)."""
    prev_end, start = tokens[k - 1][1], tokens[k][0]
    if prev_end < start:
        return 2
    if _is_word_char(text[prev_end - 1]) and _is_word_char(text[start]):
        return 0
    return 1


def _best_cut(text: str, tokens: Sequence[Span], lo: int, hi: int, target: float) -> int:
    """The cut index in [lo, hi] with the cleanest boundary, nearest ``target`` among equals."""
    return max(
        range(lo, hi + 1),
        key=lambda k: (_cut_quality(text, tokens, k), -abs(k - target), -k),
    )


def _sentence_ranges(text: str, tokens: Sequence[Span]) -> list[Span]:
    starts = [a for a, _ in tokens]
    # Every non-space character is inside some token, so no sentence range is empty.
    return [(bisect_left(starts, a), bisect_left(starts, b)) for a, b in sentence_spans(text)]


def _split_long(text: str, tokens: Sequence[Span], lo: int, hi: int, limit: int) -> list[Span]:
    """Cut a sentence longer than ``limit`` tokens into near-equal pieces of at most ``limit``,
    preferring cuts between words."""
    pieces: list[Span] = []
    while hi - lo > limit:
        parts = math.ceil((hi - lo) / limit)
        target = lo + math.ceil((hi - lo) / parts)
        k = _best_cut(text, tokens, lo + max(1, (target - lo) // 2), lo + limit, target)
        pieces.append((lo, k))
        lo = k
    pieces.append((lo, hi))
    return pieces


def _check_sizes(chunk_tokens: int, overlap: int) -> None:
    if chunk_tokens < 1:
        raise ConfigError(f"chunk_tokens must be at least 1, got {chunk_tokens}")
    if not 0 <= overlap < chunk_tokens:
        raise ConfigError(
            f"overlap must be between 0 and chunk_tokens - 1 ({chunk_tokens - 1}), got {overlap}"
        )


def chunk_spans(text: str, *, chunk_tokens: int = 300, overlap: int = 30) -> list[Span]:
    """Character ranges of the chunks of ``text`` (see ``chunk_document``)."""
    _check_sizes(chunk_tokens, overlap)
    tokens = token_spans(text)
    units: list[Span] = []
    for lo, hi in _sentence_ranges(text, tokens):
        units.extend(_split_long(text, tokens, lo, hi, chunk_tokens))

    def size(first: int, last: int) -> int:  # tokens in units[first:last]
        return units[last - 1][1] - units[first][0] if last > first else 0

    spans: list[Span] = []
    i = 0  # first unit not yet in any chunk
    prev_first = -1
    while i < len(units):
        first = i
        if spans:
            while first - 1 > prev_first and size(first - 1, i) <= overlap:
                first -= 1
            while first < i and size(first, i + 1) > chunk_tokens:
                first += 1
        end = i + 1  # units[i] alone always fits: _split_long guarantees it
        while end < len(units) and size(first, end + 1) <= chunk_tokens:
            end += 1
        spans.append((tokens[units[first][0]][0], tokens[units[end - 1][1] - 1][1]))
        prev_first, i = first, end
    return spans


def chunk_document(doc: Document, *, chunk_tokens: int = 300, overlap: int = 30) -> list[Chunk]:
    """Pack whole sentences into chunks of at most ``chunk_tokens`` tokens (ours: defaults match
    Settings.chunk_tokens / chunk_overlap). A sentence longer than a chunk is cut into near-equal
    token pieces. Each chunk after the first starts with trailing sentences of the previous
    chunk totalling at most ``overlap`` tokens (never the whole previous chunk), dropped when they
    would leave no room for new text. Chunk ids are "<doc_id>#c<ord>"."""
    spans = chunk_spans(doc.text, chunk_tokens=chunk_tokens, overlap=overlap)
    return [_piece(doc.text[a:b], id=f"{doc.id}#c{ord_}", doc_id=doc.id, ord=ord_)
            for ord_, (a, b) in enumerate(spans)]


def _piece(body: str, **fields: object) -> Chunk:
    """A chunk or sub-chunk of ``body`` with its token count."""
    return Chunk(text=body, n_tokens=count_tokens(body), **fields)  # type: ignore[arg-type]


def chunk_documents(
    docs: Iterable[Document], *, chunk_tokens: int = 300, overlap: int = 30
) -> list[Chunk]:
    return [
        c for d in docs for c in chunk_document(d, chunk_tokens=chunk_tokens, overlap=overlap)
    ]


def _halve(text: str, tokens: Sequence[Span], starts: set[int], lo: int, hi: int) -> int | None:
    """Where to cut [lo, hi) in two: the sentence boundary nearest the middle if it leaves each
    side at least a quarter of the tokens (ours), else the cleanest token cut near the middle.
    None when the piece is a single token."""
    n = hi - lo
    if n < 2:
        return None
    mid = lo + n / 2
    inner = [s for s in starts if lo < s < hi]
    if inner:
        best = min(inner, key=lambda s: (abs(s - mid), s))
        if 4 * min(best - lo, hi - best) >= n:
            return best
    margin = max(1, math.ceil(n / 4))
    return _best_cut(text, tokens, lo + margin, hi - margin, mid)


def split_subchunks(chunk: Chunk, *, tau: int, target_tokens: int | None = None) -> list[Chunk]:
    """KET-RAG sub-chunks of ``chunk``.

    KET-RAG §5.1 (Algorithm 3, line 10) calls τ "the number of splits": each chunk is
    "recursively divided into equal-sized sub-chunks over τ iterations", giving 2^τ sub-chunks
    per chunk (τ = 0 keeps the chunk whole; §6.5 pairs ℓ = 150, 300, 600, 1200 with τ = 0..3 to
    keep sub-chunks the same length). Here each halving cuts at the sentence boundary nearest the
    middle, falling back to a token cut when sentences are too uneven. A piece of one token
    cannot be halved, so a very short chunk yields fewer than 2^τ sub-chunks.

    ``target_tokens`` (ours; None = halve every piece τ times, the paper): the sub-chunk size τ
    was chosen for. A piece is halved only while halving brings it nearer that size (longer
    than 4/3 of it), so a document shorter than the chunk size is not cut into fragments that
    lose their subject ("Victoria Falls (...) | is a waterfall in southern Africa").

    Sub-chunks are level 1, ``parent_id`` = chunk id, ids "<chunk_id>.s<ord>" in text order.
    """
    if chunk.level != 0:
        raise ConfigError(f"{chunk.id} is already a sub-chunk; split level-0 chunks only")
    return [_piece(chunk.text[a:b], id=f"{chunk.id}.s{ord_}", doc_id=chunk.doc_id, ord=ord_, level=1,
                   parent_id=chunk.id)
            for ord_, (a, b) in enumerate(subchunk_spans(chunk.text, tau=tau, target_tokens=target_tokens))]


def subchunk_spans(text: str, *, tau: int, target_tokens: int | None = None) -> list[Span]:
    """Character ranges of the sub-chunks of ``text`` (see ``split_subchunks``)."""
    if tau < 0:
        raise ConfigError(f"tau (number of halvings) must be >= 0, got {tau}")
    whole = _unhalved_span(text, tau, target_tokens)
    return whole if whole is not None else _halved_spans(text, tau, target_tokens)


def _halved_spans(text: str, tau: int, target_tokens: int | None) -> list[Span]:
    """``subchunk_spans`` by the halvings themselves (any text)."""
    tokens = token_spans(text)
    if not tokens:
        return []
    starts = {lo for lo, _ in _sentence_ranges(text, tokens)}
    pieces: list[Span] = [(0, len(tokens))]
    for _ in range(tau):
        halved: list[Span] = []
        for lo, hi in pieces:
            small = target_tokens is not None and 3 * (hi - lo) <= 4 * target_tokens
            k = None if small else _halve(text, tokens, starts, lo, hi)
            halved.extend([(lo, hi)] if k is None else [(lo, k), (k, hi)])
        if len(halved) == len(pieces):
            break
        pieces = halved
    return [(tokens[lo][0], tokens[hi - 1][1]) for lo, hi in pieces]


def _unhalved_span(text: str, tau: int, target_tokens: int | None) -> list[Span] | None:
    """The sub-chunk spans of a text that is not halved at all (τ = 0, or already near the target
    size: most chunks of a short-passage corpus), found without the token and sentence spans
    (issue 29: 0.81 -> 0.23 s CPU for the 10,332 chunks of 10k passages); None when it may be halved.
    Every character outside whitespace is inside a token, so the one piece runs from the first
    non-space character to the last; the text has no token when it is all whitespace."""
    if tau > 0 and target_tokens is None:
        return None
    if tau > 0 and 3 * count_tokens(text) > 4 * target_tokens:  # type: ignore[operator]
        return None
    stripped = text.strip()
    if not stripped:
        return []
    start = len(text) - len(text.lstrip())
    return [(start, start + len(stripped))]


def total_tokens(chunks: Iterable[Chunk]) -> int:
    """Sum of n_tokens, e.g. the input side of a build cost estimate."""
    return sum(c.n_tokens for c in chunks)
