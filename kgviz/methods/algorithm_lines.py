"""Each method's algorithm as its paper writes it, in short numbered lines, and which line each
trace step carries out (the Trace player's algorithm box lights that line).

One table per method, kept here rather than in the methods' step calls so that a step's line is
decided in one place: ``annotate`` writes ``step.data["algo_line"]`` (the line's number) on every
step of a finished run (kgviz.run calls it once), and a step no rule matches (an error step) gets
none. Rules match a step by its kind and the start of its title, the two things every method
already records.

Sources (/work/shared/papers): KET-RAG (paper 004) Algorithm 4 with Algorithm 2 inlined for its
skeleton channel (Algorithm 3, the index, runs at build time: its line is never lit at query
time); KG-Retriever (paper 002) §3.2.2's document-level then KG-level retrieval; KG-Infused RAG
(paper 003) §3.3–3.6, Eq. 3–10; KG-RAG (paper 001) publishes no algorithm box, so its Chain of
Explorations loop is our reconstruction from the paper's summary (the box says so). The
baselines get the plain steps they run, named as baselines. The final answer line is the shared
answer step every method uses (kgviz.answer).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from kgviz.methods.base import TraceStep

DATA_KEY = "algo_line"  # step.data key holding the line's number


@dataclass(frozen=True)
class AlgoLine:
    """One numbered line: its text and how deep it is nested (0 = top level)."""

    number: int
    text: str
    depth: int = 0


@dataclass(frozen=True)
class Rule:
    """A step of ``kind`` whose title starts with ``title`` (a regular expression) runs ``line``."""

    kind: str
    title: str
    line: int


@dataclass(frozen=True)
class AlgorithmBox:
    """A method's algorithm: ``title`` names it, ``source`` says where it comes from and
    ``reconstruction`` marks a box the paper does not print (our reading of its prose)."""

    title: str
    source: str
    lines: tuple[AlgoLine, ...]
    rules: tuple[Rule, ...]
    reconstruction: bool = False

    def line(self, number: int) -> AlgoLine:
        for ln in self.lines:
            if ln.number == number:
                return ln
        raise KeyError(number)

    def line_of(self, step: TraceStep) -> int | None:
        for r in self.rules:
            if step.kind == r.kind and re.match(r.title, step.title):
                return r.line
        return None


def _lines(*rows: tuple[int, str]) -> tuple[AlgoLine, ...]:
    return tuple(AlgoLine(n, text, depth) for n, (depth, text) in enumerate(rows, 1))


ANSWER = "answer ← LLM(q, C)  (kgviz's shared answer step)"

KG_RAG = AlgorithmBox(
    title="Chain of Explorations (CoE)",
    source="paper 001 prints no algorithm box: our reconstruction from its description",
    reconstruction=True,
    lines=_lines(
        (0, "plan ← LLM(q): which relations to follow"),
        (0, "S ← start nodes by vector search over the KG"),
        (0, "for hop = 1 … max_hops:"),
        (1, "N ← neighbourhood of the path's end (Cypher)"),
        (1, "rank N by similarity to q and the plan"),
        (1, "f ← LLM chooses the next fact among the top-k of N"),
        (1, "if dead end: step back to the previous hop"),
        (1, "if LLM(q, path) says enough: stop"),
        (0, "C ← the path's facts"),
        (0, ANSWER),
    ),
    rules=(
        Rule("llm", "Plan the exploration", 1),
        Rule("seed", "Start nodes", 2),
        Rule("expand", r"Hop \d+: fetch", 4),
        Rule("score", r"Hop \d+: rank", 5),
        Rule("select", r"Hop \d+: choose", 6),
        Rule("prune", r"(Dead end|Backtrack)", 7),
        Rule("llm", r"Hop \d+: enough", 8),
        Rule("context", "Path facts", 9),
        Rule("answer", "Answer", 10),
    ),
)

KG_RETRIEVER = AlgorithmBox(
    title="KG-Retriever retrieval (§3.2.2)",
    source="paper 002, §3.2.2: document-level, then KG-level retrieval",
    lines=_lines(
        (0, "D ← Top-N documents by cos(v_doc, v_q)"),
        (0, "D ← D ∪ neighbours on the document graph (one-hop / attentive / multi-hop, weight w)"),
        (0, "E ← entities of D with w · CosSim(v_e, v_q) > λ  (Eq. 2)"),
        (0, "T ← triples of E, at most T of them"),
        (0, "C ← T"),
        (0, ANSWER),
    ),
    rules=(
        Rule("seed", r"Top-\d+ documents", 1),
        Rule("expand", "Document layer", 2),
        Rule("score", "Entity filter", 3),
        Rule("select", r"(\d+ triples selected|Top triples)", 4),
        Rule("context", r"\d+ triples", 5),
        Rule("answer", "Answer", 6),
    ),
)

KG_INFUSED = AlgorithmBox(
    title="KG-Infused RAG (Eq. 3–10)",
    source="paper 003, §3.3–3.6",
    lines=_lines(
        (0, "E⁰ ← top-kₑ entities by sim(q, dᵢ) = q · dᵢ  (Eq. 3–4)"),
        (0, "for round i = 1 … k:"),
        (1, "fetch the 1-hop triples of Eⁱ"),
        (1, "Gⁱ ← LLM selects the triples relevant to q"),
        (1, "G_act ∪= Gⁱ;  Eⁱ⁺¹ ← tails(Gⁱ) ∖ E_act  (Eq. 5–6); stop if ∅"),
        (0, "S_G ← LLM summary of G_act"),
        (0, "q′ ← LLM(q, S_G)  (Eq. 7)"),
        (0, "D ← D_q ∪ D_q′  (Eq. 8)"),
        (0, "S_D ← LLM note of D for q  (Eq. 9)"),
        (0, "S_final ← LLM(S_D, S_G)  (Eq. 10);  C ← S_final"),
        (0, ANSWER),
    ),
    rules=(
        Rule("seed", "Seed entities", 1),
        Rule("expand", r"Round \d+: one-hop", 3),
        Rule("select", r"Round \d+: triple selection", 4),
        Rule("expand", r"Round \d+: activation frontier", 5),
        Rule("llm", "Subgraph summary", 6),
        Rule("llm", "(KG-based q|Q)uery expansion", 7),
        Rule("seed", "(Dual retrieval|Equal budget)", 8),
        Rule("llm", "Passage note", 9),
        Rule("llm", "KG-augmented note", 10),
        Rule("context", "Context: the KG-augmented note", 10),
        Rule("answer", "Answer", 11),
    ),
)

KET_RAG = AlgorithmBox(
    title="KET-RAG retrieval (Algorithms 2 and 4)",
    source="paper 004: Algorithm 4 (KET-Retrieval) with Algorithm 2 (KG-Retrieval) inlined",
    lines=_lines(
        (0, "index G = G_s ∪ G_k ← KET-Index(T, K, β, τ)  (Alg. 3, built beforehand)"),
        (0, "C_s ← KG-Retrieval(G_s, θ·λ)  (Alg. 4 l.1 = Alg. 2):"),
        (1, "S_e ← 10 entities nearest q  (Alg. 2 l.1)"),
        (1, "S_r ← relationships adjacent to S_e, up to θλ/2 tokens  (l.2)"),
        (1, "S_t ← text units most adjacent to S_e ∪ S_r, up to θλ/2  (l.3)"),
        (0, "S_k ← keywords by cos(v, q) until N(S_k) holds 2(1−θ)λ tokens  (Alg. 4 l.2)"),
        (0, "S ← sub-chunks of N(S_k) by cos(v, q), up to (1−θ)λ  (l.3)"),
        (0, "C_k ← ⊕(S)  (l.4)"),
        (0, "return C_s ⊕ C_k  (l.5);  " + ANSWER),
    ),
    rules=(
        Rule("seed", "Skeleton channel: seed entities", 3),
        Rule("select", "Skeleton channel: relationships", 4),
        Rule("context", "Skeleton channel: (text units|nothing)", 5),
        Rule("seed", "Keyword channel: seed keywords", 6),
        Rule("score", "Keyword channel: candidate", 7),
        Rule("context", "Keyword channel: chosen", 8),
        Rule("answer", "Answer", 9),
    ),
)

_CHUNKS = r"\d+ chunks within"
TEXT_RAG = AlgorithmBox(
    title="Text RAG (baseline)",
    source="a baseline, not one of the four papers: hybrid chunk search",
    lines=_lines(
        (0, "R_v ← chunks by cosine to q"),
        (0, "R_b ← chunks by BM25"),
        (0, "rank by reciprocal rank fusion: Σ 1/(k + rank)"),
        (0, "C ← top chunks within the budget"),
        (0, ANSWER),
    ),
    rules=(Rule("seed", "Vector search", 1), Rule("seed", "BM25 search", 2), Rule("score", "Reciprocal", 3),
           Rule("context", _CHUNKS, 4), Rule("answer", "Answer", 5)),
)

NO_RETRIEVAL = AlgorithmBox(
    title="No retrieval (baseline)",
    source="a baseline: the model answers from what it knows",
    lines=_lines((0, "C ← nothing"), (0, ANSWER)),
    rules=(Rule("context", "No retrieval", 1), Rule("answer", "Answer", 2)),
)

BOXES: dict[str, AlgorithmBox] = {
    "kg-rag": KG_RAG, "kg-retriever": KG_RETRIEVER, "kg-infused": KG_INFUSED,
    "ket-rag": KET_RAG, "skeleton-rag": KET_RAG, "keyword-rag": KET_RAG, "ket-full": KET_RAG,
    "text-rag": TEXT_RAG, "bm25": TEXT_RAG, "dense": TEXT_RAG, "no-retrieval": NO_RETRIEVAL,
}


def box_for(method: str) -> AlgorithmBox | None:
    """The method's box; None for a method registered without one (a new method shows no box)."""
    return BOXES.get(method)


def annotate(method: str, trace: Sequence[TraceStep]) -> None:
    """Write each step's line number into ``step.data[DATA_KEY]``; steps no rule matches are left
    without one (the player then lights nothing rather than a wrong line)."""
    box = box_for(method)
    if box is None:
        return
    for step in trace:
        n = box.line_of(step)
        if n is not None:
            step.data[DATA_KEY] = n


def step_line(step: TraceStep) -> int | None:
    v = (step.data or {}).get(DATA_KEY)
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else None


def box_data(method: str, trace: Sequence[TraceStep]) -> Mapping[str, object] | None:
    """The box as plain data for the player: its lines, each with the "ours" reasons of the
    run's steps that carried it out (a line is marked ours when one of its steps departs from
    the paper), and per step the line it lights (None: no line)."""
    box = box_for(method)
    if box is None:
        return None
    ours: dict[int, list[str]] = {}
    for s in trace:
        n = step_line(s)
        if n is not None and s.ours:
            ours.setdefault(n, [])
            if s.ours not in ours[n]:
                ours[n].append(s.ours)
    return {
        "title": box.title, "source": box.source, "reconstruction": box.reconstruction,
        "lines": [{"n": ln.number, "text": ln.text, "depth": ln.depth, "ours": "; ".join(ours.get(ln.number, []))}
                  for ln in box.lines],
        "steps": [step_line(s) for s in trace],
    }
