"""Claim -> evidence: what the judge cited for one claim, located in the source text.

For each context item a claim's verdict cites (``ClaimVerdict.evidence``), the passage it came
from and, inside it, the span the judge quoted (``ClaimVerdict.quote``: the offline check's
deciding sentence, verbatim) with the words that decided (``ClaimVerdict.matched``). A
contradicted claim's quote is the contradicting sentence, so its span is the contradicting span.
An LLM judge cites ids and gives a reason but quotes nothing: its items are shown whole, with no
span, and the view says so (nothing is guessed).

The passage of an item is the chunk it came from when the store has it (a sub-chunk's parent, a
triple's or sentence's source chunk), else the item's own text (a chunk is its own passage). ``node_ids`` are the graph nodes to highlight in the evidence overlay: each cited
item's node (a kg-rag sentence ``<triple id>#sentence`` stands for its triple) and the chunk it
came from.

Pure data (no HTML here): kgviz.viz.claim_evidence draws it, escaped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from kgviz.graph.protocol import GraphStore
from kgviz.graph import reads
from kgviz.methods.base import ContextItem
from kgviz.run import Run
from kgviz.verify.judge import ClaimVerdict

_NODE_KINDS = frozenset({"chunk", "subchunk", "triple", "entity"})
_SENTENCE_SUFFIX = "#sentence"


@dataclass(frozen=True)
class CitedItem:
    id: str
    kind: str
    text: str  # the item as the judge read it
    source: str  # its provenance (chunk id or document title)
    passage: str  # the source passage shown
    passage_id: str  # the chunk the passage is (or the item's own id)
    span: tuple[int, int] | None  # the quoted sentence inside ``passage``; None when not found / none quoted
    words: tuple[tuple[int, int], ...] = ()  # the decisive words inside the span
    span_is: str = ""  # what the span is: "the judge's quote" or "the sentence the fact was read from"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "text": self.text, "source": self.source,
                "passage": self.passage, "passage_id": self.passage_id, "span_is": self.span_is,
                "span": list(self.span) if self.span else None, "words": [list(w) for w in self.words]}


@dataclass(frozen=True)
class ClaimEvidence:
    method: str
    claim: str
    label: str  # the judge's verdict
    reason: str
    quote: str
    matched: tuple[str, ...]
    items: tuple[CitedItem, ...] = ()
    missing: tuple[str, ...] = ()  # cited ids that are not in the run's context (shown, not dropped)
    node_ids: tuple[str, ...] = field(default=())

    @property
    def quoted_found(self) -> bool:
        return any(i.span for i in self.items)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "claim": self.claim, "label": self.label, "reason": self.reason,
                "quote": self.quote, "matched": list(self.matched), "items": [i.to_dict() for i in self.items],
                "missing": list(self.missing), "node_ids": list(self.node_ids)}


def find_span(passage: str, quote: str) -> tuple[int, int] | None:
    """``quote`` inside ``passage``: verbatim, else with any run of whitespace matching any other
    (a chunk's line breaks against a sentence read with single spaces)."""
    if not quote.strip():
        return None
    at = passage.find(quote)
    if at >= 0:
        return at, at + len(quote)
    words = quote.split()
    m = re.search(r"\s+".join(re.escape(w) for w in words), passage)
    return (m.start(), m.end()) if m else None


def find_words(passage: str, span: tuple[int, int], words: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """Each decisive word's first whole-word occurrence inside ``span``."""
    out: list[tuple[int, int]] = []
    a, b = span
    for w in words:
        if not w.strip():
            continue
        m = re.search(rf"(?<!\w){re.escape(w)}(?!\w)", passage[a:b])
        if m:
            out.append((a + m.start(), a + m.end()))
    return tuple(sorted(set(out)))


def node_of(item: ContextItem) -> str:
    if item.kind == "sentence" and item.id.endswith(_SENTENCE_SUFFIX):
        return item.id[: -len(_SENTENCE_SUFFIX)]
    return item.id if item.kind in _NODE_KINDS else ""


def _is_chunk_id(text: str) -> bool:
    return "#c" in text and " " not in text


def _chunks_of(cited: Sequence[ContextItem], store: GraphStore | None) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(item id -> the chunk it came from, chunk id -> text, triple id -> its source sentence)."""
    if store is None:
        return {}, {}, {}
    tids = sorted({node_of(i) for i in cited if i.kind in ("triple", "sentence") and node_of(i)})
    rows = {r["id"]: r for r in reads.triple_sources(store, tids)} if tids else {}
    chunk_of: dict[str, str] = {}
    for i in cited:
        if i.kind == "subchunk" and ".s" in i.id:
            chunk_of[i.id] = i.id.rsplit(".s", 1)[0]
        elif i.kind in ("triple", "sentence", "entity"):
            row: dict[str, Any] = dict(rows.get(node_of(i)) or {})
            cid = row.get("chunk_id") or (i.source if _is_chunk_id(i.source) else "")
            if cid:
                chunk_of[i.id] = cid
    texts = reads.chunk_texts(store, sorted(set(chunk_of.values()))) if chunk_of else {}
    sentences = {t: str(r.get("sentence") or "") for t, r in rows.items()}
    return chunk_of, texts, sentences


def claim_evidence(run: Run, claim: ClaimVerdict, store: GraphStore | None = None) -> ClaimEvidence:
    """The cited items of ``claim`` (a verdict on ``run``'s answer) with their passages and spans.

    The span marked in a passage, the first that is found: the judge's quote in the source chunk;
    for a fact (triple), the sentence it was extracted from in that chunk (the quote is then the
    fact as stated, which no passage holds verbatim); the quote in the item's own text."""
    by_id: dict[str, ContextItem] = {}
    for i in [*run.context.items, *run.context.sources]:
        by_id.setdefault(i.id, i)
    cited = [by_id[e] for e in claim.evidence if e in by_id]
    missing = tuple(e for e in claim.evidence if e not in by_id)
    chunk_of, texts, sentences = _chunks_of(cited, store)
    items: list[CitedItem] = []
    nodes: list[str] = []
    for i in cited:
        cid = chunk_of.get(i.id, "")
        chunk = texts.get(cid)
        passage, pid, span, what = i.text, i.id, None, ""
        if chunk is not None:
            passage, pid = chunk, cid
            span, what = find_span(chunk, claim.quote), "the judge's quote"
            if span is None and sentences.get(node_of(i)):
                span, what = find_span(chunk, sentences[node_of(i)]), "the sentence the fact was read from"
        if span is None:
            own = find_span(i.text, claim.quote)
            if own is not None:
                passage, pid, span, what = i.text, i.id, own, "the judge's quote"
        words = find_words(passage, span, claim.matched) if span else ()
        items.append(CitedItem(i.id, i.kind, i.text, i.source, passage, pid, span, words, what if span else ""))
        for n in (node_of(i), cid):
            if n and n not in nodes:
                nodes.append(n)
    return ClaimEvidence(run.method, claim.text, claim.label, claim.reason, claim.quote, tuple(claim.matched),
                         tuple(items), missing, tuple(nodes))
