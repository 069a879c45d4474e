"""kg-rag and an imported curated KG (issue 12, item 4): left out by default (it would be an oracle
the other methods do not read), walked with ``use_curated`` and then labelled in every step, in
the context items' source and in the context notes."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from kgviz.graph.store import GraphStore
from kgviz.index.import_kg import import_kg
from kgviz.index.params import BuildParams
from kgviz.methods.base import MethodContext
from kgviz.methods.kg_rag import CURATED_SOURCE, KGRagParams
from kgviz.methods.kg_rag_narrator import CURATED_TAG
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import run_method

EMB = HashingEmbedder(128)
QUESTION = "Where was Ada Brill born?"
TSV = "\n".join([
    "head\trelation\ttail",
    "Ada Brill\tplace of birth\tVeyn",
    "Ada Brill\tfounder of\tKestrel Press",
    "Veyn\tcountry\tLessary",
])
ENTITIES = "\n".join(json.dumps(e) for e in [
    {"label": "Ada Brill", "description": "Ada Brill was a printer who founded the Kestrel Press."},
    {"label": "Veyn", "description": "Veyn is a town in Lessary."},
])


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MethodContext, set[str]]]:
    from kgviz.index.pipeline import build
    from kgviz.ingest import document_from_text

    tmp = tmp_path_factory.mktemp("curated")
    store = GraphStore.open(tmp / "db", embedder_id=EMB.id, dim=EMB.dim)
    docs = [document_from_text("Ada Brill founded the Kestrel Press in 1901. The Kestrel Press is located in Dunmore.",
                               title="Kestrel Press", source="kestrel.txt"),
            document_from_text("Dunmore is a port town. The Dunmore harbour was rebuilt in 1950.",
                               title="Dunmore", source="dunmore.txt")]
    build(docs, store, Reasoner(OfflineLLM(), EMB), BuildParams(workers=1))
    (tmp / "t.tsv").write_text(TSV, encoding="utf-8")
    (tmp / "e.jsonl").write_text(ENTITIES, encoding="utf-8")
    import_kg(store, EMB, tmp / "t.tsv", tmp / "e.jsonl")
    curated = {r["id"] for r in store.query("MATCH (n:Entity) WHERE n.origin = 'curated' RETURN n.id AS id")}
    curated |= {r["id"] for r in store.query("MATCH (n:Triple) WHERE n.origin = 'curated' RETURN n.id AS id")}
    assert curated
    yield MethodContext(store, Reasoner(OfflineLLM(), EMB)), curated
    store.close()


def _touched(run: Any) -> set[str]:
    ids = {n.id for s in run.trace for n in s.nodes}
    ids |= {x for s in run.trace for e in s.edges for x in (e.source, e.target)}
    return ids


def test_default_leaves_the_curated_kg_out(graph: tuple[MethodContext, set[str]]) -> None:
    ctx, curated = graph
    assert KGRagParams().use_curated is False
    run = run_method("kg-rag", QUESTION, ctx)
    assert run.ok, run.error
    assert not _touched(run) & curated  # no step seeds on, offers or follows a curated node
    assert all(i.source != CURATED_SOURCE for i in run.context.items) and "curated" not in run.context.notes
    (seed,) = [s for s in run.trace if s.kind == "seed"]
    assert "curated KG is left out (use_curated=False)" in seed.detail
    assert not any("curated" in s.data for s in run.trace)


def test_use_curated_walks_and_labels_every_curated_fact(graph: tuple[MethodContext, set[str]]) -> None:
    ctx, curated = graph
    run = run_method("kg-rag", QUESTION, ctx, {"use_curated": True})
    assert run.ok, run.error
    assert _touched(run) & curated
    for s in run.trace:
        mine = [n for n in s.nodes if n.id in curated]
        if s.kind == "answer":  # the shared answer step labels each context node with its source
            assert mine and all(n.label == CURATED_SOURCE for n in mine)
            continue
        for n in mine:
            assert n.label.startswith(CURATED_TAG), (s.title, n)
        assert set(s.data.get("curated", [])) == {n.id for n in mine}, s.title
        assert all(not n.label.startswith(CURATED_TAG) for n in s.nodes if n.id not in curated)
    from_kg = [i for i in run.context.items if i.id in curated]
    assert from_kg, "the curated birthplace fact should reach the context"
    assert all(i.source == CURATED_SOURCE for i in from_kg)
    assert all(i.source != CURATED_SOURCE for i in run.context.items if i.id not in curated)
    assert run.context.notes["curated"].startswith(f"{len(from_kg)} of ")
    assert "Veyn" in run.context.render()
