"""Gold funnel labels on hand-made runs over the fixture graph (tests/support/fixture_graph.py).

Fixture facts used: "Portugal" is in a chunk and in a triple (Lisbon capital of Portugal);
"400,000" (books) is only in chunk text, never in an entity or triple; "Millennium Centre" sits
in the Cardiff cluster, which has no RELATED path to the Marta Ruiz cluster.
"""
from __future__ import annotations

from typing import Sequence

from tests.support.fixture_graph import FixtureGraph

from kgviz.answer import fit_budget
from kgviz.methods.base import ContextItem, NodeRef, RetrievedContext, TraceStep
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.verify.funnel import FunnelParams, funnel_row, gold_presence, kept_text, seed_node_ids


def run(method: str, answer: str, items: Sequence[tuple[str, str]] = (), *, seeds: Sequence[str] = (),
        budget: int | None = None, error: str = "") -> Run:
    trace = [TraceStep(0, "seed", "seeds", nodes=[NodeRef(s, "Entity", "seed") for s in seeds])]
    ctx = RetrievedContext(items=[ContextItem(i, "chunk", t) for i, t in items])
    # what the answer step would have kept under ``budget`` (None: no answer step recorded)
    cut = None if budget is None else fit_budget(ctx.items, budget)
    return Run(method, "q?", {}, ctx, answer, trace, Usage(), "offline", error=error, answer_cut=cut)


def test_gold_presence_scans_corpus_and_graph(kg: FixtureGraph) -> None:
    p = gold_presence(kg.store, ["portugal"])
    assert p.in_corpus and p.in_graph
    assert kg.chunks["Lisbon"][0] in p.corpus_chunks
    assert kg.entities["Portugal"] in p.graph_entities
    assert kg.triples[("Lisbon", "capital of", "Portugal")] in p.graph_triples
    books = gold_presence(kg.store, ["400,000"])
    assert books.in_corpus and not books.in_graph
    assert books.corpus_chunks == [kg.chunks["Harbour Library"][1]]
    nowhere = gold_presence(kg.store, ["Madrid"])
    assert not nowhere.in_corpus and not nowhere.in_graph


def test_correct_and_not_in_corpus(kg: FixtureGraph) -> None:
    p = gold_presence(kg.store, ["Portugal"])
    assert funnel_row(run("kg-rag", "portugal."), p).label == "correct"
    madrid = gold_presence(kg.store, ["Madrid"])
    assert funnel_row(run("kg-rag", "Lisbon"), madrid).label == "not in corpus"


def test_extraction_miss_only_for_graph_methods(kg: FixtureGraph) -> None:
    p = gold_presence(kg.store, ["400,000"])
    ctx = [("c1", "The Harbour Library opened in 1998.")]
    assert funnel_row(run("kg-rag", "1998", ctx, seeds=[kg.entities["Harbour Library"]]), p).label == "extraction miss"
    # text retrieval does not depend on extraction: the same miss is a retrieval miss there
    assert funnel_row(run("text-rag", "1998", ctx), p).label == "retrieval/traversal miss"


def test_entry_point_miss_versus_traversal_miss(kg: FixtureGraph) -> None:
    p = gold_presence(kg.store, ["Millennium Centre"])
    assert kg.entities["Cardiff"] in p.related and kg.entities["Marta Ruiz"] not in p.related
    far = run("kg-rag", "Lisbon", [("c1", "Marta Ruiz designed it.")], seeds=[kg.entities["Marta Ruiz"],
                                                                               kg.entities["Valencia"]])
    row = funnel_row(far, p)
    assert row.label == "entry-point miss" and row.seeds_near_answer is False
    near = run("kg-rag", "Wales", [("c1", "Cardiff is the capital of Wales.")], seeds=[kg.entities["Cardiff"]])
    row = funnel_row(near, p)
    assert row.label == "retrieval/traversal miss" and row.seeds_near_answer is True
    assert seed_node_ids(near) == {kg.entities["Cardiff"]}
    # with no hops only the gold entities and the ends of gold triples count: Cardiff (an end of
    # "Millennium Centre located in Cardiff") stays near, its neighbour Wales does not
    tight = gold_presence(kg.store, ["Millennium Centre"], FunnelParams(related_hops=0))
    assert kg.entities["Cardiff"] in tight.related
    assert kg.entities["Wales"] in p.related and kg.entities["Wales"] not in tight.related


def test_context_truncation_and_generation_error(kg: FixtureGraph) -> None:
    p = gold_presence(kg.store, ["Portugal"])
    filler = " ".join(["harbour"] * 30)
    items = [("c1", filler), ("c2", "Lisbon is the capital of Portugal.")]
    cut = run("text-rag", "Spain", items, budget=30)  # the first item fills the budget: c2 is dropped
    assert "Portugal" not in kept_text(cut)
    row = funnel_row(cut, p)
    assert (row.in_context, row.in_kept_context, row.label) == (True, False, "context truncation")
    seen = run("text-rag", "Spain", items)  # default budget keeps both
    row = funnel_row(seen, p)
    assert (row.in_kept_context, row.label) == (True, "generation error")
    # the same kept context, but the answer step abstained: not called a generation error
    row = funnel_row(run("text-rag", "Insufficient information.", items), p)
    assert (row.in_kept_context, row.label) == (True, "abstained")


def test_baseline_and_failed_runs(kg: FixtureGraph) -> None:
    p = gold_presence(kg.store, ["Portugal"])
    assert funnel_row(run("no-retrieval", "insufficient information"), p).label == "no retrieval"
    failed = funnel_row(run("kg-rag", "", error="index missing"), p)
    assert failed.label == "method failed" and failed.explanation == "index missing"


def test_gold_presence_on_texts_normalised_once_equals_a_scan_with_contains(kg: FixtureGraph) -> None:
    """The graph's texts are normalised once per database state; what is found is what
    ``contains`` finds text by text (whole tokens, SQuAD normalisation, aliases)."""
    from kgviz.answer_norm import contains
    from kgviz.graph import reads

    for golds in (["portugal"], ["400,000"], ["The Tagus", "Marta Ruiz"], ["Madrid"], ["  ", "ruiz"]):
        p = gold_presence(kg.store, golds)
        g = [x for x in golds if x.strip()]
        hit = lambda text: any(contains(text, x) for x in g)  # noqa: E731
        assert p.corpus_chunks == [r["id"] for r in reads.chunk_texts_all(kg.store) if hit(r["text"] or "")]
        assert p.graph_entities == [r["id"] for r in reads.entity_names_all(kg.store)
                                    if hit(f"{r['name'] or ''} | {(r['aliases'] or '').replace('|', ' | ')}")]
        assert p.graph_triples == [r["id"] for r in reads.triple_facts_all(kg.store) if hit(r["text"] or "")]
    assert gold_presence(kg.store, ["portugal"]).graph_triples  # something is found at all


def test_texts_find_every_text_holding_a_needle_in_order() -> None:
    """One joined string searched with str.find finds what a test per text finds: the first and
    the last text, a needle twice in one text (listed once), texts that are hit by two needles."""
    import random

    from kgviz.verify.funnel import Texts

    padded = [" lisbon capital of portugal ", " portugal ", " madrid ", " a portugal portugal b ", " x ",
              " portugal "]
    texts = Texts(padded)
    assert texts.containing([" portugal "]) == [0, 1, 3, 5]
    assert texts.containing([" madrid ", " x "]) == [2, 4]
    assert texts.containing([" lisbon capital ", " b "]) == [0, 3]
    assert texts.containing([" spain "]) == [] and texts.containing([]) == []
    assert Texts([]).containing([" portugal "]) == []
    rng = random.Random(28)
    words = ["a", "b", "ab", "ba", "c"]
    many = [" " + " ".join(rng.choice(words) for _ in range(rng.randint(0, 5))) + " " for _ in range(400)]
    for needles in ([" a "], [" ab ", " c "], [" a b "], [" ba ba ", " b "]):
        assert Texts(many).containing(needles) == [i for i, t in enumerate(many) if any(n in t for n in needles)]
