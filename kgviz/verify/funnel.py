"""The gold funnel: where along the pipeline a gold answer was lost.

For a question with gold answers: is a gold answer in the corpus (some Chunk text contains it,
SQuAD-normalised), in the graph (an Entity name or a Triple text contains it), in the method's
retrieved context, in the part of that context the answer step kept (its budget cut), and in the
answer? The first "no" names the failure:

* ``correct``                    the answer contains a gold answer
* ``not in corpus``              no document states it: nothing to retrieve
* ``extraction miss``            in the corpus, not in the graph, not retrieved (graph methods)
* ``entry-point miss``           in the graph, but the method's seed steps never touched a node
                                 related to it (within ``related_hops`` of a gold node)
* ``retrieval/traversal miss``   the method started near it but did not retrieve it
* ``context truncation``         retrieved, but cut by the answer step's token budget
* ``abstained``                  in the kept context, yet the answer step said it cannot answer
                                 ("insufficient information"; kgviz.claims.is_abstention)
* ``generation error``           in the kept context, yet the answer is wrong
* ``no retrieval``               the no-retrieval baseline (no context by design)
* ``method failed``              the run ended with an error
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from kgviz.graph import reads
from kgviz.answer import DEFAULT_BUDGET_TOKENS, fit_budget
from kgviz.answer_norm import contains, normalize_answer
from kgviz.claims import is_abstention
from kgviz.errors import UnknownMethodError
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import TripleFactRow
from kgviz.methods.base import Method
from kgviz.methods.registry import get_method
from kgviz.run import Run

LABELS = ("correct", "not in corpus", "extraction miss", "entry-point miss", "retrieval/traversal miss",
          "context truncation", "abstained", "generation error", "no retrieval", "method failed")
BASELINE_PAPER = "baseline"


@dataclass(frozen=True)
class FunnelParams:
    """How the funnel decides an entry-point miss."""

    related_hops: int = field(default=2, metadata={"doc": "ours: RELATED hops around a gold entity that still "
                                                          "count as 'near the answer' for a seed step"})


@dataclass
class GoldPresence:
    """Where the gold answers occur in the workspace (computed once per question)."""

    golds: list[str]
    corpus_chunks: list[str] = field(default_factory=list)  # Chunk ids whose text contains a gold
    graph_entities: list[str] = field(default_factory=list)  # Entity ids whose name contains a gold
    graph_triples: list[str] = field(default_factory=list)  # Triple ids whose text contains a gold
    related: set[str] = field(default_factory=set)  # node ids counted as near the answer

    @property
    def in_corpus(self) -> bool:
        return bool(self.corpus_chunks)

    @property
    def in_graph(self) -> bool:
        return bool(self.graph_entities or self.graph_triples)

    def to_dict(self) -> dict[str, Any]:
        return {"golds": self.golds, "in_corpus": self.in_corpus, "in_graph": self.in_graph,
                "corpus_chunks": self.corpus_chunks, "graph_entities": self.graph_entities,
                "graph_triples": self.graph_triples, "n_related": len(self.related)}


def _any_gold(text: str, golds: Sequence[str]) -> bool:
    return any(contains(text, g) for g in golds)


class Texts:
    """Padded normalised texts joined into one string, one per line (a normalised text holds no
    line break: normalisation splits on whitespace), so finding a needle in every text is a few
    ``str.find`` calls instead of a Python test per text (~50k on HotpotQA, held the GIL for
    20 ms a question beside every session's methods, issue 28)."""

    def __init__(self, padded: list[str]) -> None:
        self.joined = "\n".join(padded)
        self.starts: list[int] = []
        at = 0
        for text in padded:
            self.starts.append(at)
            at += len(text) + 1

    def containing(self, needles: Sequence[str]) -> list[int]:
        """Indices, ascending, of the texts holding any needle (a needle holds no line break)."""
        found: set[int] = set()
        for needle in needles:
            at = self.joined.find(needle)
            while at >= 0:
                row = bisect_right(self.starts, at) - 1
                found.add(row)
                after = row + 1  # one hit is enough for a text: go on from the next one
                if after == len(self.starts):
                    break
                at = self.joined.find(needle, self.starts[after])
        return sorted(found)


@dataclass
class NormalisedGraph:
    """Every chunk text, entity name (with aliases) and triple text, SQuAD-normalised and padded
    with a space each side, as ``kgviz.answer_norm.contains`` compares them. Normalising ~50k
    texts is most of a gold scan (seconds on HotpotQA), so it is done once per state of the graph
    and shared by every question and session (``GraphStore.derived``)."""

    chunk_ids: list[str]
    chunks: Texts
    entity_ids: list[str]
    entities: Texts
    triple_rows: list[TripleFactRow]  # rows of reads.triple_facts_all
    triples: Texts


def _pad(text: str) -> str:
    return f" {normalize_answer(text)} "


def _normalised_graph(store: GraphStore) -> NormalisedGraph:
    chunks = reads.chunk_texts_all(store)
    entities = reads.entity_names_all(store)
    triples = reads.triple_facts_all(store)
    return NormalisedGraph(
        [r["id"] for r in chunks], Texts([_pad(r["text"] or "") for r in chunks]),
        [r["id"] for r in entities],
        Texts([_pad(f"{r['name'] or ''} | {(r['aliases'] or '').replace('|', ' | ')}") for r in entities]),
        list(triples), Texts([_pad(r["text"] or "") for r in triples]))


def _graph_texts(store: GraphStore) -> NormalisedGraph:
    derived = getattr(store, "derived", None)
    return derived("funnel.normalised_texts", _normalised_graph) if derived else _normalised_graph(store)


def gold_presence(store: GraphStore, golds: Sequence[str], params: FunnelParams = FunnelParams()) -> GoldPresence:
    """Find the gold answers in chunk texts, entity names and triple texts (in Python, because
    SQuAD normalisation is not expressible in Cypher; on texts normalised once per graph state,
    the same whole-token test as ``contains``), then collect the nodes near them."""
    golds = [g for g in golds if g.strip()]
    p = GoldPresence(golds)
    needles = [f" {n} " for n in (normalize_answer(g) for g in golds) if n]
    texts = _graph_texts(store)
    p.corpus_chunks = [texts.chunk_ids[i] for i in texts.chunks.containing(needles)]
    p.graph_entities = [texts.entity_ids[i] for i in texts.entities.containing(needles)]
    triples = [texts.triple_rows[i] for i in texts.triples.containing(needles)]
    p.graph_triples = [r["id"] for r in triples]
    p.related = _related(store, p, triples, params)
    return p


def _related(store: GraphStore, p: GoldPresence, triples: list[TripleFactRow], params: FunnelParams) -> set[str]:
    entities = set(p.graph_entities) | {r[k] for r in triples for k in ("s", "o") if r[k]}
    if entities and params.related_hops > 0:
        entities |= reads.entities_within(store, sorted(entities), params.related_hops)
    near: set[str] = set(entities) | set(p.graph_triples) | set(p.corpus_chunks)
    near |= {r["c"] for r in triples if r["c"]}
    if entities:
        ids = sorted(entities)
        near |= reads.triples_touching(store, ids)
        near |= reads.chunks_mentioning(store, ids)
    chunk_ids = sorted(i for i in near if "#c" in i)
    if chunk_ids:
        near |= reads.documents_of_chunks(store, chunk_ids)
        near |= reads.subchunks_of_chunks(store, chunk_ids)
    return near


@dataclass
class FunnelRow:
    method: str
    in_corpus: bool
    in_graph: bool
    in_context: bool
    in_kept_context: bool
    in_answer: bool
    seeds_near_answer: bool | None  # None: the method has no seed step to judge
    label: str
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def seed_node_ids(run: Run) -> set[str]:
    """Every node a seed step of the trace touched (any role)."""
    return {n.id for s in run.trace if s.kind == "seed" for n in s.nodes}


def kept_text(run: Run) -> str:
    """The context text the answer step saw (``run.answer_cut``). A run without one (built by
    hand, or whose answer step failed) is read at the default budget (kgviz.answer's rule)."""
    cut = run.answer_cut or fit_budget(run.context.items, DEFAULT_BUDGET_TOKENS)
    return "\n".join(i.text for i in cut.items)


def is_graph_method(name: str) -> bool:
    try:
        return getattr(get_method(name), "paper", BASELINE_PAPER) != BASELINE_PAPER
    except UnknownMethodError:  # a run loaded from a file may name a method not registered here
        return False


def funnel_row(run: Run, presence: GoldPresence) -> FunnelRow:
    golds = presence.golds
    context = "\n".join(i.text for i in run.context.items)
    in_context = _any_gold(context, golds)
    in_kept = in_context and _any_gold(kept_text(run), golds)
    in_answer = not run.error and _any_gold(run.answer, golds)
    seeds = seed_node_ids(run)
    near = bool(seeds & presence.related) if seeds else None
    graph = is_graph_method(run.method)
    row = FunnelRow(run.method, presence.in_corpus, presence.in_graph, in_context, in_kept, in_answer, near, "", "")
    method = _method_or_none(run.method)
    no_context = method is not None and method.no_context
    if run.error:
        row.label, row.explanation = "method failed", run.error
    elif in_answer:
        row.label, row.explanation = "correct", "the answer contains a gold answer"
    elif no_context:
        row.label, row.explanation = "no retrieval", "the baseline answers from model memory only"
    elif in_kept and is_abstention(run.answer):
        row.label, row.explanation = "abstained", "the gold answer was in the context, but the answer step abstained"
    elif in_kept:
        row.label, row.explanation = "generation error", "the gold answer was in the context the answer step saw"
    elif in_context:
        row.label, row.explanation = "context truncation", "retrieved, but cut by the answer step's token budget"
    elif not presence.in_corpus:
        row.label, row.explanation = "not in corpus", "no chunk of the corpus contains a gold answer"
    elif graph and not presence.in_graph:
        row.label, row.explanation = "extraction miss", "in the corpus, but no entity or triple contains it"
    elif graph and near is False:
        row.label, row.explanation = ("entry-point miss", "the seed steps touched no node within "
                                      "reach of the gold answer")
    else:
        row.label, row.explanation = ("retrieval/traversal miss",
                                      "the gold answer is reachable but the method did not retrieve it")
    return row


def _method_or_none(name: str) -> Method | None:
    try:
        return get_method(name)
    except UnknownMethodError:
        return None


def funnel(runs: Iterable[Run], presence: GoldPresence) -> list[FunnelRow]:
    return [funnel_row(r, presence) for r in runs]
