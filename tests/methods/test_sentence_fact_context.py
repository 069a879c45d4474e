"""A sentence fact (kind 'sentence': the offline extractor's fallback, relation "in same sentence as")
says no more than that two names share a sentence, so every graph method that puts one in its
context states the sentence with it (issue 12): kg-rag adds a sentence item after the fact,
kg-retriever and KET's skeleton channel give the fact its sentence as Graph-RAG gives a
relationship its description. Relation facts are stated as before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.facts.triples import SENTENCE_KIND, SENTENCE_RELATION, stated_fact
from kgviz.methods.base import MethodContext
from kgviz.run import run_method

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = [json.loads(line)["question"] for line in
             (ROOT / "sample_data" / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def _kinds(ctx: MethodContext, ids: list[str]) -> dict[str, dict]:
    rows = ctx.store.query("MATCH (t:Triple) WHERE t.id IN $ids RETURN t.id AS id, t.kind AS kind, "
                           "t.text AS text, t.sentence AS sentence", {"ids": ids})
    return {r["id"]: r for r in rows}


def test_stated_fact_adds_the_sentence_to_sentence_facts_only() -> None:
    sent = {"text": f"Edda Lunn {SENTENCE_RELATION} Orrin Bridge", "kind": SENTENCE_KIND,
            "sentence": "Edda Lunn designed the Orrin Bridge in 1921."}
    assert stated_fact(sent['text'], sent['kind'], sent['sentence']) == f"{sent['text']}: {sent['sentence']}"
    rel = {"text": "Edda Lunn designed Orrin Bridge", "kind": "relation", "sentence": "Edda Lunn designed it."}
    assert stated_fact(rel['text'], rel['kind'], rel['sentence']) == rel["text"]
    assert stated_fact(sent['text'], sent['kind'], '') == sent["text"]


@pytest.mark.parametrize("method", ["kg-retriever", "skeleton-rag"])
def test_fact_items_state_the_sentence_of_a_sentence_fact(sample_graph: MethodContext, method: str) -> None:
    seen = {SENTENCE_KIND: 0, "relation": 0}
    for q in QUESTIONS:
        run = run_method(method, q, sample_graph)
        assert run.ok, run.error
        facts = [i for i in run.context.items if i.kind == "triple"]
        rows = _kinds(sample_graph, [i.id for i in facts])
        for item in facts:
            row = rows[item.id]
            if row["kind"] == SENTENCE_KIND:
                assert item.text == f"{row['text']}: {row['sentence']}"
            else:
                assert item.text == row["text"]
            seen[row["kind"]] = seen.get(row["kind"], 0) + 1
    assert seen[SENTENCE_KIND] > 0 and seen["relation"] > 0  # both kinds were exercised


def test_kg_rag_follows_a_sentence_fact_with_its_sentence(sample_graph: MethodContext) -> None:
    checked = 0
    for q in QUESTIONS:
        run = run_method("kg-rag", q, sample_graph)
        assert run.ok, run.error
        items = run.context.items
        rows = _kinds(sample_graph, [i.id for i in items if i.kind == "triple"])
        for n, item in enumerate(items):
            if item.kind == "triple" and rows.get(item.id, {}).get("kind") == SENTENCE_KIND:
                sentence = rows[item.id]["sentence"]
                # its sentence follows it, unless an earlier fact already brought the same sentence
                assert any(i.text == sentence for i in items[: n + 2])
                checked += 1
        assert all(i.id.endswith("#sentence") for i in items if i.kind == "sentence")
        # include_sentences is off by default: a relation fact is never followed by its own sentence
        for n, item in enumerate(items[:-1]):
            if item.kind == "triple" and rows.get(item.id, {}).get("kind") != SENTENCE_KIND:
                assert items[n + 1].id != f"{item.id}#sentence"
    assert checked > 0
