"""KET-RAG Algorithm 1 line 3 (issue 27.1): with an LLM the build writes a description of every
skeleton entity and relationship, checked against its chunk and embedded, and the skeleton channel
seeds and states by them; offline (or with ket_descriptions off) the source sentences stay, marked
ours in the trace."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgviz.graph.store import GraphStore
from kgviz.index.ground import NOT_IN_TEXT, PROMPT_EXAMPLE, REPEATS_ITEM, Source, check_description
from kgviz.index.ket_describe import META_DESCRIPTIONS
from kgviz.index.pipeline import BuildParams, build
from kgviz.methods.base import MethodContext
from kgviz.methods.ket_channels import OURS_ENTITY_TEXT, OURS_RELATIONSHIP_TEXT
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import run_method
from kgviz.tasks.ket_describe import parse_description
from tests.support.index_fakes import ScriptedLLM, corpus, describe_reply

EMB = HashingEmbedder(64)
PARAMS = BuildParams(chunk_tokens=40, chunk_overlap=0, workers=1, similar_docs_k=2)
QUESTION = "Who designed the Orrin Bridge?"
SKELETON = {"skeleton_beta": 0.0, "entity_match": "embedding"}


def _build(tmp: Path, llm: Any, **fields: Any) -> GraphStore:
    store = GraphStore.open(tmp, embedder_id=EMB.id, dim=EMB.dim)
    store._report = build(corpus(), store, Reasoner(llm, EMB), BuildParams(**{**PARAMS.__dict__, **fields}))  # type: ignore[attr-defined]
    return store


def _skeleton_steps(store: GraphStore) -> tuple[Any, dict[str, Any]]:
    run = run_method("skeleton-rag", QUESTION, MethodContext(store, Reasoner(OfflineLLM(), EMB)), SKELETON)
    assert not run.error, run.error
    return run, {s.title: s for s in run.trace}


def test_parse_takes_the_description_out_of_the_reply() -> None:
    assert parse_description('Description: "Mira Tesk is an engineer.\nShe designed a bridge."') == \
        "Mira Tesk is an engineer. She designed a bridge."
    assert parse_description("  \n") == ""


def test_a_description_is_checked_against_its_chunk() -> None:
    src = Source("The Orrin Bridge was designed by Mira Tesk in 1921.")
    assert check_description("Mira Tesk designed the Orrin Bridge in 1921.", src) is None
    assert check_description("Mira Tesk designed it in 1925.", src).reason == NOT_IN_TEXT
    assert check_description("I cannot help with that.", src).reason == NOT_IN_TEXT
    assert check_description("Ana Pell built the Orrin Bridge.", src).reason == PROMPT_EXAMPLE
    echo = check_description("Orrin Bridge | was designed by | Mira Tesk", src,
                             item="Orrin Bridge | was designed by | Mira Tesk")
    assert echo is not None and echo.reason == REPEATS_ITEM


def test_an_llm_build_describes_the_skeleton_and_the_channel_uses_it(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    store = _build(tmp_path / "llm", llm)
    try:
        report = store._report  # type: ignore[attr-defined]
        desc = report.ket["descriptions"]
        assert desc["chunks"] == report.extracted_chunks and desc["failed"] == 0
        assert desc["entities"] > 0 and desc["relationships"] > 0 and desc["prompt"] == "DESCRIBE_SKELETON"
        assert llm.calls == report.extracted_chunks + desc["items"]  # one description call per item
        assert store.get_meta(META_DESCRIPTIONS) and report.counts["Description"] == desc["entities"] + desc["relationships"]
        rows = {r["target"]: r for r in store.query("MATCH (d:Description) RETURN d.target AS target, d.text AS text, "
                                                     "d.kind AS kind")}
        run, steps = _skeleton_steps(store)
        seed, rel = steps["Skeleton channel: seed entities"], steps["Skeleton channel: relationships"]
        assert seed.data["descriptions"] == "llm" and rel.data["descriptions"] == "llm"
        entities = [i for i in run.context.items if i.kind == "entity"]
        described = [i for i in entities if i.id in rows]
        assert described and all(i.text.endswith(rows[i.id]["text"]) for i in described)
        triples = [i for i in run.context.items if i.kind == "triple" and i.id in rows]
        assert triples and all(i.text.endswith(": " + rows[i.id]["text"]) for i in triples)
        # the texts are the paper's now: only items left undescribed would be marked
        assert OURS_ENTITY_TEXT not in seed.ours and OURS_RELATIONSHIP_TEXT not in rel.ours
        assert bool(seed.data["not_described"]) == ("no LLM-written description" in seed.ours)
    finally:
        store.close()


def test_without_descriptions_the_sentences_stay_and_are_marked_ours(tmp_path: Path) -> None:
    for name, llm, fields in (("offline", OfflineLLM(), {}), ("off", ScriptedLLM(), {"ket_descriptions": False})):
        store = _build(tmp_path / name, llm, **fields)
        try:
            assert store.get_meta(META_DESCRIPTIONS) is None and store._report.counts["Description"] == 0  # type: ignore[attr-defined]
            assert "descriptions" not in store._report.ket  # type: ignore[attr-defined]
            _, steps = _skeleton_steps(store)
            seed, rel = steps["Skeleton channel: seed entities"], steps["Skeleton channel: relationships"]
            assert "descriptions" not in seed.data
            assert OURS_ENTITY_TEXT in seed.ours and OURS_RELATIONSHIP_TEXT in rel.ours
        finally:
            store.close()


def test_copies_of_the_example_and_echoes_are_left_out(tmp_path: Path) -> None:
    def copying(prompt: str) -> str:
        item = prompt.rsplit('"', 2)[-2]
        if " | " in item:
            return item  # a relationship: the item repeated
        # an entity: the extraction prompt's example, or a grounded sentence
        return "Ana Pell founded Pell Glassworks in 1911." if item.startswith(("Mira", "Orrin")) else describe_reply(prompt)

    store = _build(tmp_path / "copy", ScriptedLLM(describe=copying))
    try:
        desc = store._report.ket["descriptions"]  # type: ignore[attr-defined]
        assert desc["rejected"][PROMPT_EXAMPLE] > 0 and desc["rejected"][REPEATS_ITEM] > 0
        assert desc["relationships"] == 0 and desc["entities"] > 0 and desc["rejected_lines"]
        texts = [r["t"] for r in store.query("MATCH (d:Description) RETURN d.text AS t")]
        assert texts and not any("Ana Pell" in t or " | " in t for t in texts)
    finally:
        store.close()


def test_an_empty_reply_leaves_the_item_to_its_sentences(tmp_path: Path) -> None:
    store = _build(tmp_path / "none", ScriptedLLM(describe=lambda prompt: ""))
    try:
        report = store._report  # type: ignore[attr-defined]
        desc = report.ket["descriptions"]
        assert desc["failed"] == desc["items"] > 0 and desc["entities"] == 0
        assert any("skeleton descriptions failed" in w for w in report.warnings)
        assert store.get_meta(META_DESCRIPTIONS) is None
    finally:
        store.close()
