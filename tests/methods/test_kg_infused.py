"""kg-infused (KG-Infused RAG, paper 003): spreading activation, dual retrieval, notes, trace.

Graphs are built per test in tmp_path with the hashing embedder. A scripted fake LLM (not
offline) drives the selection exactly where a test needs to control it.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from kgviz.errors import ConfigError, LLMOutputError, MethodError
from kgviz.graph.store import GraphStore
from kgviz.methods import kg_infused as M
from kgviz.methods.base import MethodContext, Tracer, registered
from kgviz.offline import kg_infused as O
from kgviz.prompts import kg_infused as P
from kgviz.providers.base import LLMBase
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.tasks import kg_infused as T
from kgviz.types import Completion, Message, Usage
from tests.support.data import SHARED_DATA

DIM = 256
DATA = SHARED_DATA


# ------------------------------------------------------------------------------------------------
# graph building
def _tid(s: str, r: str, o: str) -> str:
    return "tri:" + hashlib.sha1(f"{s}|{r}|{o}".encode()).hexdigest()[:16]


def build(store: GraphStore, emb: HashingEmbedder, entities: Sequence[tuple[str, str, str, str]],
          triples: Sequence[tuple[str, str, str]], chunks: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """entities: (id, name, description, origin); triples: (subject id, relation, object id);
    chunks: (title, text), one document each. Returns {"s|r|o" names: triple id}."""
    names = {e[0]: e[1] for e in entities}
    origin = {e[0]: e[3] for e in entities}
    vecs = emb.embed([f"{n}. {d}" for _, n, d, _ in entities])
    store.bulk_load_nodes("Entity", [
        {"id": i, "name": n, "type": "", "description": d, "origin": o, "aliases": "", "n_mentions": 1,
         "emb": v.tolist()} for (i, n, d, o), v in zip(entities, vecs)])
    ids: dict[str, str] = {}
    rows, rel, subj, obj = [], [], [], []
    for s, r, o in triples:
        tid = _tid(s, r, o)
        text = f"{names[s]} {r} {names[o]}"
        ids[f"{names[s]}|{r}|{names[o]}"] = tid
        rows.append({"id": tid, "subject": names[s], "relation": r, "object": names[o], "subject_id": s,
                     "object_id": o, "text": text, "chunk_id": "", "doc_id": "", "sentence": "",
                     "origin": origin[s], "emb": emb.embed([text])[0].tolist()})
        rel.append({"from": s, "to": o, "relation": r, "triple_id": tid, "origin": origin[s]})
        subj.append({"from": tid, "to": s})
        obj.append({"from": tid, "to": o})
    if rows:
        store.bulk_load_nodes("Triple", rows)
        store.bulk_load_rels("RELATED", rel, from_table="Entity", to_table="Entity")
        store.bulk_load_rels("SUBJ", subj, from_table="Triple", to_table="Entity")
        store.bulk_load_rels("OBJ", obj, from_table="Triple", to_table="Entity")
    docs, chs, has = [], [], []
    for n, (title, text) in enumerate(chunks):
        did = f"doc:{n:016d}"
        docs.append({"id": did, "title": title, "source": "test", "sha256": did, "text": text, "n_tokens": 10,
                     "emb": emb.embed([text])[0].tolist()})
        chs.append({"id": f"{did}#c0", "doc_id": did, "ord": 0, "text": text, "n_tokens": 10, "pagerank": 0.0,
                    "core": False, "emb": emb.embed([text])[0].tolist()})
        has.append({"from": did, "to": f"{did}#c0"})
    if docs:
        store.bulk_load_nodes("Document", docs)
        store.bulk_load_nodes("Chunk", chs)
        store.bulk_load_rels("HAS_CHUNK", has, from_table="Document", to_table="Chunk")
    store.ensure_fts_index("Chunk")
    return ids


def chunk_id(n: int) -> str:
    return f"doc:{n:016d}#c0"


# A small film KG: a chain film -> director -> birthplace -> country, with a cycle at the end.
FILM_ENTITIES = [
    ("kg:fg", "Forbidden Ground", "Forbidden Ground is a 1968 Hungarian film.", "curated"),
    ("kg:pg", "Pal Gabor", "Pal Gabor was a Hungarian film director and screenwriter.", "curated"),
    ("kg:bp", "Budapest", "Budapest is the capital city of Hungary.", "curated"),
    ("kg:hu", "Hungary", "Hungary is a country in Central Europe.", "curated"),
    ("kg:drama", "drama film", "Drama is a film genre.", "curated"),
    ("kg:fr", "Free Guy", "Free Guy is a 2021 American action comedy film.", "curated"),
    ("kg:sl", "Shawn Levy", "Shawn Levy is a Canadian film director.", "curated"),
]
FILM_TRIPLES = [
    ("kg:fg", "director", "kg:pg"),
    ("kg:fg", "genre", "kg:drama"),
    ("kg:pg", "place of birth", "kg:bp"),
    ("kg:pg", "occupation", "kg:drama"),
    ("kg:bp", "country", "kg:hu"),
    ("kg:hu", "capital", "kg:bp"),
    ("kg:fr", "director", "kg:sl"),
]
FILM_CHUNKS = [
    ("Forbidden Ground", "Forbidden Ground is a 1968 Hungarian drama film directed by Pal Gabor."),
    ("Pal Gabor", "Pal Gabor was born in Budapest in 1932. He directed many films."),
    ("Budapest", "Budapest is the capital and most populous city of Hungary."),
    ("Free Guy", "Free Guy is a 2021 film directed by Shawn Levy."),
    ("Shawn Levy", "Shawn Levy was born in Montreal in 1968."),
    ("Oriole", "The AAM-N-4 Oriole was an air-to-air missile built by the Martin Company."),
]


@pytest.fixture(scope="module")
def emb() -> HashingEmbedder:
    return HashingEmbedder(DIM)


@pytest.fixture(scope="module")
def film_store(tmp_path_factory: pytest.TempPathFactory, emb: HashingEmbedder):
    """Shared by the tests that only read it (the method never writes)."""
    store = GraphStore.open(tmp_path_factory.mktemp("film") / "ws", embedder_id=emb.id, dim=DIM)
    ids = build(store, emb, FILM_ENTITIES, FILM_TRIPLES, FILM_CHUNKS)
    yield store, ids
    store.close()


# ------------------------------------------------------------------------------------------------
# a scripted LLM (not offline): replies per prompt kind, records every prompt
class ScriptedLLM(LLMBase):
    provider = "fake"
    model = "scripted"

    def __init__(self, select: Callable[[str], str] | None = None, **replies: str) -> None:
        self.select = select or (lambda prompt: "NONE")
        self.replies = {"summary": "The film was directed by a Hungarian director.",
                        "query": "Where was Pal Gabor born?", "note": "Pal Gabor was born in Budapest.",
                        "kg_note": "Forbidden Ground was directed by Pal Gabor, who was born in Budapest."}
        self.replies.update(replies)
        self.prompts: list[tuple[str, str]] = []

    def _complete(self, messages: Sequence[Message], system: str | None, max_tokens: int,
                  json_schema: dict[str, Any] | None) -> Completion:
        prompt = messages[-1].content
        kinds = {P.SELECT_TRIPLES: "select", P.UPDATE_TRIPLES: "update", P.SUMMARIZE: "summary",
                 P.EXPAND_QUERY: "query", P.PASSAGE_NOTE: "note", P.KG_NOTE: "kg_note"}
        kind = next(k for tmpl, k in kinds.items() if prompt.startswith(tmpl[:60]))
        self.prompts.append((kind, prompt))
        text = self.select(prompt) if kind in ("select", "update") else self.replies[kind]
        return Completion(text, Usage(10, 5, 1), self.model, self.provider)

    def of(self, kind: str) -> list[str]:
        return [p for k, p in self.prompts if k == kind]


def shown(prompt: str) -> dict[str, str]:
    """The candidate triples a selection prompt showed: display text -> its [n]."""
    block = prompt.rsplit("<data>", 1)[1].split("</data>", 1)[0]
    return {m.group(2): m.group(1) for m in re.finditer(r"\[(\d+)\] (<[^>]+>)", block)}


def picker(relations: set[str], extra: str = "") -> Callable[[str], str]:
    """Select every shown triple whose relation is in ``relations`` (copied as the paper asks)."""
    def select(prompt: str) -> str:
        lines = [f"[{n}] {t}" for t, n in shown(prompt).items() if t.split(" | ")[1] in relations]
        return "Sure! Here are the relevant triples:\n" + "\n".join(lines) + ("\n" + extra if extra else "")
    return select


def run(store: GraphStore, llm: Any, question: str, emb: HashingEmbedder, **params: Any):
    tracer = Tracer(Reasoner(llm, emb))
    ctx = MethodContext(store, tracer.reasoner)
    out = M.KGInfusedRAG().retrieve(question, ctx, M.KGInfusedParams(**params), tracer)
    return out, tracer.steps


def rounds(steps) -> list[dict[str, Any]]:
    return [s.data for s in steps if s.kind == "expand" and "frontier" in s.data]


# ------------------------------------------------------------------------------------------------
def test_registered_with_paper_presets() -> None:
    cls = registered()["kg-infused"]
    assert cls.title == "KG-Infused RAG" and cls.paper == "003"
    assert cls.presets["paper"] == M.KGInfusedParams(passage_search="dense", direction="out")  # head -> tail, Eq. 6
    p = cls.presets["paper"]
    assert (p.k_e, p.max_rounds, p.k_p, p.max_triples_per_entity, p.max_entities_per_round) == (3, 2, 6, 50, 10)
    assert cls.presets["code"].max_rounds == 3
    with pytest.raises(ConfigError):
        M.KGInfusedParams(kg_source="wikidata")
    with pytest.raises(ConfigError):
        M.KGInfusedParams(k_p=1)


def test_stage_sequence_and_chosen_nodes_exist(film_store, emb) -> None:
    store, ids = film_store
    llm = ScriptedLLM(picker({"director", "place of birth"}))
    out, steps = run(store, llm, "Where was the director of Forbidden Ground born?", emb)
    kinds = [s.kind for s in steps]
    assert kinds == ["seed", "expand", "select", "expand", "expand", "select", "expand",
                     "llm", "llm", "seed", "llm", "llm", "context"]
    assert [s.llm.task for s in steps if s.llm] == [
        "kginf_select_triples", "kginf_select_triples", "kginf_summarize", "kginf_expand_query",
        "kginf_passage_note", "kginf_kg_note"]
    assert [s.llm.prompt_name for s in steps if s.kind == "select"] == [
        "kg_infused.SELECT_TRIPLES", "kg_infused.UPDATE_TRIPLES"]
    # every node a step chose or used exists in the store, in the table the ref names
    for s in steps:
        for n in s.nodes:
            if n.role in ("chosen", "seed", "context"):
                assert store.existing_ids(n.table, [n.id]) == {n.id}, (s.title, n)
    # the paper's generator sees only the KG-augmented note (Eq. 11)
    assert [i.kind for i in out.items] == ["note"]
    assert out.items[0].text == llm.replies["kg_note"]
    assert out.notes["expanded_query"] == llm.replies["query"]
    assert out.notes["kg_source"] == "curated"
    assert set(out.node_ids) >= {ids["Forbidden Ground|director|Pal Gabor"], ids["Pal Gabor|place of birth|Budapest"]}
    # the summary prompt got the memory, the KG-note prompt got the passage note and the summary
    assert "<Pal Gabor | place of birth | Budapest>" in llm.of("summary")[0]
    assert llm.replies["note"] in llm.of("kg_note")[0] and llm.replies["summary"] in llm.of("kg_note")[0]


def test_scripted_selection_is_exact_and_foreign_picks_are_recorded(film_store, emb) -> None:
    store, ids = film_store
    bogus = "<Forbidden Ground | composer | Someone>\ntri:doesnotexist\n[99]"
    llm = ScriptedLLM(picker({"director"}, extra=bogus))
    _, steps = run(store, llm, "Who directed Forbidden Ground?", emb, max_rounds=1)
    sel = next(s for s in steps if s.kind == "select")
    cands = shown(llm.of("select")[0])
    want = {ids[t.strip("<>").replace(" | ", "|")] for t in cands if " | director | " in t}
    assert want and set(sel.data["selected"]) == want
    assert {n.id for n in sel.nodes if n.role == "chosen" and n.table == "Triple"} == want
    rejected = {n.id for n in sel.nodes if n.role == "rejected"}
    assert rejected and not rejected & want
    assert set(sel.data["ignored"]) == {"<Forbidden Ground | composer | Someone>", "tri:doesnotexist", "[99]"}
    assert "ignored" in sel.detail


def test_stop_rule_no_new_entities_stops_before_max_rounds(tmp_path: Path, emb) -> None:
    # A <-> B only: round 1 selects A->B and B->A (both seeds), so no new entity remains
    ents = [("kg:a", "Alpha river", "Alpha river flows into Beta lake.", "curated"),
            ("kg:b", "Beta lake", "Beta lake is fed by Alpha river.", "curated")]
    store = GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=DIM)
    build(store, emb, ents, [("kg:a", "flows into", "kg:b"), ("kg:b", "fed by", "kg:a")],
          [("Alpha", "Alpha river flows into Beta lake.")])
    llm = ScriptedLLM(picker({"flows into", "fed by"}))
    _, steps = run(store, llm, "Where does Alpha river flow?", emb, max_rounds=5)
    r = rounds(steps)
    assert len(r) == 1 and r[0]["frontier"] == [] and "no new entities" in r[0]["stop"]
    assert len(llm.of("select")) == 1 and not llm.of("update")
    # a chain that keeps finding new entities runs until max_rounds
    store.close()


def test_max_rounds_bounds_a_long_chain(tmp_path: Path, emb) -> None:
    ents = [(f"kg:n{i}", f"Node{i}", f"Node{i} is a station.", "curated") for i in range(6)]
    store = GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=DIM)
    build(store, emb, ents, [(f"kg:n{i}", "next", f"kg:n{i + 1}") for i in range(5)])
    llm = ScriptedLLM(picker({"next"}))
    _, steps = run(store, llm, "Which station follows Node0?", emb, max_rounds=2, k_e=1)
    r = rounds(steps)
    assert [d["round"] for d in r] == [1, 2] and "max_rounds" in r[-1]["stop"]
    assert r[0]["memory_size"] == 1 and r[1]["memory_size"] == 2
    store.close()


def hub_with_leaves(tmp_path: Path, emb: HashingEmbedder, n: int) -> GraphStore:
    """A curated KG of one city that contains ``n`` towns (kg:hub -contains-> kg:l0..)."""
    hub = ("kg:hub", "Hub city", "Hub city is a large city.", "curated")
    leaves = [(f"kg:l{i}", f"Leaf{i}", f"Leaf{i} is a town.", "curated") for i in range(n)]
    store = GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=DIM)
    build(store, emb, [hub] + leaves, [("kg:hub", "contains", f"kg:l{i}") for i in range(n)])
    return store


def test_per_entity_cap(tmp_path: Path, emb) -> None:
    store = hub_with_leaves(tmp_path, emb, 12)
    for cap in ("similarity", "random"):
        llm = ScriptedLLM()
        _, steps = run(store, llm, "Which towns does Hub city contain?", emb, k_e=1, max_triples_per_entity=4,
                       max_rounds=1, triple_cap=cap)
        exp = next(s for s in steps if s.kind == "expand")
        assert exp.data["per_entity"]["kg:hub"] == {"total": 12, "kept": 4}
        assert len([n for n in exp.nodes if n.table == "Triple"]) == 4
        assert len(shown(llm.of("select")[0])) == 4
    store.close()


def test_per_round_entity_cap(tmp_path: Path, emb) -> None:
    store = hub_with_leaves(tmp_path, emb, 8)
    llm = ScriptedLLM(picker({"contains"}))
    _, steps = run(store, llm, "Which towns does Hub city contain?", emb, k_e=1, max_entities_per_round=3,
                   max_rounds=2)
    r = rounds(steps)
    assert len(r[0]["frontier"]) == 3 and len(r[0]["over_cap"]) == 5
    second = next(s for s in steps if s.kind == "expand" and s.data.get("round") == 2 and "active" in s.data)
    assert second.data["active"] == r[0]["frontier"]
    store.close()


def test_dual_retrieve_dedup_rule() -> None:
    q = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    q2 = [("b", 0.9), ("d", 0.8), ("a", 0.7), ("e", 0.6), ("f", 0.5), ("g", 0.4)]
    split = M.dual_retrieve(q, q2, 6)
    assert split["question"] == ["a", "b", "c"]
    assert split["expanded"] == ["d", "e", "f"]
    assert split["duplicates"] == ["b", "a"] and split["unused"] == ["g"]
    # the expanded query's top k_p may not hold enough new ones: the set is then smaller
    short = M.dual_retrieve(q, [("a", 1.0), ("b", 0.9), ("c", 0.8), ("d", 0.7)], 6)
    assert short["expanded"] == ["d"]


def test_dual_retrieval_in_store_with_overlapping_queries(film_store, emb) -> None:
    store, _ = film_store
    question = "Where was Pal Gabor born?"
    # the expanded query is nearly the question, so its top passages overlap the question's
    llm = ScriptedLLM(picker({"director", "place of birth"}), query="Where was Pal Gabor born, Budapest?")
    out, steps = run(store, llm, question, emb, passage_search="dense")
    dual = next(s for s in steps if s.kind == "seed" and "question_passages" in s.data)
    qp, ep, dup = dual.data["question_passages"], dual.data["expanded_passages"], dual.data["duplicates"]
    assert len(qp) == 3 and len(ep) == 3 and dup, dual.data
    assert not set(qp) & set(ep)
    assert set(dup) <= set(qp)
    assert qp == [c for c, _ in store.vector_search("Chunk", emb.embed([question])[0], 3)]
    chosen = [n.id for n in dual.nodes if n.role == "chosen"]
    assert chosen == qp + ep and len(set(chosen)) == 6
    assert {n.id for n in dual.nodes if n.role == "rejected"} == set(dup)
    # the passage-note prompt lists exactly the six merged passages
    assert len(re.findall(r"^\[\d\] ", llm.of("note")[0], re.M)) == 6


def test_kg_source_auto_picks_curated_when_present_else_corpus(tmp_path: Path, emb) -> None:
    corpus = [("ent:fg", "Forbidden Ground", "a film", "corpus"), ("ent:pg", "Pal Gabor", "a director", "corpus")]
    store = GraphStore.open(tmp_path / "a", embedder_id=emb.id, dim=DIM)
    build(store, emb, corpus, [("ent:fg", "directed by", "ent:pg")], FILM_CHUNKS[:2])
    out, steps = run(store, OfflineLLM(), "Who directed Forbidden Ground?", emb)
    assert steps[0].data["kg_source"] == "corpus" and "no curated KG" in steps[0].detail
    assert all(n.id.startswith("ent:") for n in steps[0].nodes)
    with pytest.raises(MethodError, match="curated"):
        run(store, OfflineLLM(), "Who directed Forbidden Ground?", emb, kg_source="curated")
    # importing a curated KG next to the corpus graph switches auto to it
    build(store, emb, FILM_ENTITIES, FILM_TRIPLES)
    out, steps = run(store, OfflineLLM(), "Who directed Forbidden Ground?", emb)
    assert steps[0].data["kg_source"] == "curated" and "curated KG is imported" in steps[0].detail
    assert all(n.id.startswith("kg:") for s in steps for n in s.nodes if n.table == "Entity")
    out, steps = run(store, OfflineLLM(), "Who directed Forbidden Ground?", emb, kg_source="corpus")
    assert all(n.id.startswith("ent:") for s in steps for n in s.nodes if n.table == "Entity")
    store.close()


def test_direction_auto_spreads_both_ways_only_over_the_corpus_graph(tmp_path: Path, emb) -> None:
    # "Agnes Vohl founded the institute": the question's entity is the edge's tail
    for origin, prefix, both in (("corpus", "ent:", True), ("curated", "kg:", False)):
        ents = [(f"{prefix}omi", "Ossel Marine Institute", "a research institute", origin),
                (f"{prefix}av", "Agnes Vohl", "a marine biologist", origin),
                (f"{prefix}tw", "Tarrow", "a town", origin)]
        store = GraphStore.open(tmp_path / origin, embedder_id=emb.id, dim=DIM)
        build(store, emb, ents, [(f"{prefix}av", "founded", f"{prefix}omi"), (f"{prefix}av", "born in", f"{prefix}tw")])
        llm = ScriptedLLM(picker({"founded", "born in"}))
        _, steps = run(store, llm, "Who founded the Ossel Marine Institute?", emb, k_e=1)
        first = next(s for s in steps if s.kind == "expand")
        assert [n.id for n in first.nodes if n.role == "seed"] == [f"{prefix}omi"]
        assert bool(llm.of("select")) == both
        if both:  # activation moved from the tail to the head, then on to Tarrow
            assert rounds(steps)[0]["frontier"] == [f"{prefix}av"]
            assert "<Agnes Vohl | born in | Tarrow>" in llm.of("update")[0]
        store.close()


def test_no_entities_is_an_actionable_error(tmp_path: Path, emb) -> None:
    store = GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=DIM)
    build(store, emb, [], [], FILM_CHUNKS[:1])
    with pytest.raises(MethodError, match="no entities"):
        run(store, OfflineLLM(), "Who directed Forbidden Ground?", emb)
    store.close()


def test_offline_run_activates_the_chain_and_builds_a_note(film_store, emb) -> None:
    store, ids = film_store
    question = "Where was the director of Forbidden Ground born?"
    out, steps = run(store, OfflineLLM(), question, emb)
    assert all(s.llm.mode == "offline" for s in steps if s.llm)
    memory = [i for s in steps if s.kind == "select" for i in s.data["selected"]]
    assert ids["Forbidden Ground|director|Pal Gabor"] in memory
    assert ids["Pal Gabor|place of birth|Budapest"] in memory  # reached in round 2
    note = out.items[0].text
    assert "Budapest" in note and "Pal Gabor" in note
    assert "Pal Gabor" in out.notes["expanded_query"] and out.notes["expanded_query"].startswith(question)
    # deterministic
    again, _ = run(store, OfflineLLM(), question, emb)
    assert again.to_dict() == out.to_dict()


def test_context_passages_option_adds_passages_and_triples(film_store, emb) -> None:
    store, _ = film_store
    out, _ = run(store, OfflineLLM(), "Where was the director of Forbidden Ground born?", emb, context_passages=True,
                 passage_search="hybrid")  # BM25 ('auto' with hashing) finds fewer than k_p in six tiny passages
    kinds = [i.kind for i in out.items]
    assert kinds[0] == "note" and kinds.count("chunk") == 6 and "triple" in kinds


def test_auto_passage_search_is_bm25_with_hashing_and_hybrid_with_a_neural_embedder(film_store, emb) -> None:
    store, _ = film_store
    _, steps = run(store, OfflineLLM(), "Where was the director of Forbidden Ground born?", emb)
    dual = next(s for s in steps if s.title.startswith("Dual retrieval"))
    assert dual.data["search"] == "bm25" and dual.data["passage_search"] == "auto"
    assert "passage_search 'auto' with the hashing" in dual.detail
    p = M.KGInfusedParams()
    assert M.passage_search_mode(p, "hashing-768") == "bm25"
    assert M.passage_search_mode(p, "fastembed:sentence-transformers/all-MiniLM-L6-v2") == "hybrid"
    assert M.passage_search_mode(M.KGInfusedParams(passage_search="dense"), "hashing-768") == "dense"


def test_default_context_is_the_note_and_the_method_declares_no_own_answer_budget(film_store, emb) -> None:
    from kgviz.run import context_budget
    store, _ = film_store
    out, steps = run(store, OfflineLLM(), "Where was the director of Forbidden Ground born?", emb)
    assert [i.kind for i in out.items] == ["note"]
    assert not any(s.title.startswith("Equal budget") for s in steps)
    assert context_budget(M.KGInfusedRAG(), M.KGInfusedParams()) is None  # 0 = stop at the note (the paper)
    assert context_budget(M.KGInfusedRAG(), M.KGInfusedParams(budget_tokens=900)) == (900, "budget_tokens")


@pytest.mark.parametrize("budget", [10_000, 120])
def test_budget_tokens_fills_the_budget_past_k_p_with_both_rankings(film_store, emb, budget: int) -> None:
    store, _ = film_store
    q = "Where was the director of Forbidden Ground born?"
    paper, _ = run(store, OfflineLLM(), q, emb, k_p=2, passage_search="hybrid")
    out, steps = run(store, OfflineLLM(), q, emb, k_p=2, passage_search="hybrid", budget_tokens=budget)
    fill = next(s for s in steps if s.title.startswith("Equal budget"))
    dual = next(s for s in steps if s.title.startswith("Dual retrieval"))
    kinds = [i.kind for i in out.items]
    assert kinds[0] == "note" and set(kinds[1:]) == {"chunk"}
    assert out.items[0].text == paper.items[0].text  # the note is the paper's, from the k_p passages
    ids = [i.id for i in out.items[1:]]
    first = dual.data["question_passages"] + dual.data["expanded_passages"]
    assert ids[: len(first)] == first and len(ids) == len(set(ids))  # the k_p passages first, then new ones only
    extra = fill.data["question_extra"] + fill.data["expanded_extra"]
    assert ids[len(first):] == extra
    assert all(n.score is not None for n in fill.nodes) and all(i.score is not None for i in out.items[1:])
    assert fill.data["room"] == max(0, budget - sum(i.n_tokens for i in out.items[: 1 + len(first)]))
    assert fill.data["question_tokens"] <= fill.data["room"] // 2
    assert sum(i.n_tokens for i in out.items) <= max(budget, sum(i.n_tokens for i in out.items[: 1 + len(first)]))
    if budget == 10_000:  # room for everything: the six passages, each once
        assert len(ids) == len(FILM_CHUNKS) and fill.data["question_extra"] and fill.data["expanded_extra"] is not None
    else:
        assert len(ids) < len(FILM_CHUNKS)


def test_llm_without_selection_skips_the_kg_stages_visibly(film_store, emb) -> None:
    store, _ = film_store
    llm = ScriptedLLM(lambda prompt: "None of these triples is relevant.")
    out, steps = run(store, llm, "Where was the director of Forbidden Ground born?", emb)
    assert rounds(steps)[0]["stop"] == "no triple selected"
    titles = [s.title for s in steps]
    assert "Subgraph summary skipped" in titles and "Query expansion skipped" in titles
    assert out.notes["expanded_query"] == "Where was the director of Forbidden Ground born?"
    assert out.items[0].text == llm.replies["note"]  # the KG note falls back to the passage note
    assert not llm.of("summary") and not llm.of("kg_note")


# ------------------------------------------------------------------------------------------------
# parsers and offline heuristics
CANDS = [{"n": 1, "id": "tri:1", "subject": "Free Guy", "relation": "director", "object": "Shawn Levy", "text": ""},
         {"n": 2, "id": "tri:2", "subject": "Free Guy", "relation": "publication date", "object": "2021", "text": ""},
         {"n": 3, "id": "tri:3", "subject": "Shawn Levy", "relation": "date of birth", "object": "23 July 1968",
          "text": ""}]


@pytest.mark.parametrize("reply, want", [
    ("<Free Guy | director | Shawn Levy>", ["tri:1"]),
    ("Selected Triples:\n[3] <Shawn Levy | date of birth | 23 July 1968>\n[1] <Free Guy | director | Shawn Levy>",
     ["tri:3", "tri:1"]),
    ("<free guy, director, shawn levy>", ["tri:1"]),
    ("[2] <Free Guy | released | 2021>", ["tri:2"]),  # text miscopied: the number decides
    ("Selected triples: 1, 3", ["tri:1", "tri:3"]),
    ("tri:2 and [1]", ["tri:2", "tri:1"]),
    ("I picked 2 triples that matter: [3]", ["tri:3"]),
    ("NONE", []),
])
def test_parse_selection(reply: str, want: list[str]) -> None:
    got = T.parse_selection(reply, {"candidates": CANDS})
    assert got.selected == tuple(want)
    assert got.said_none == (reply == "NONE")


def test_parse_selection_records_foreign_picks() -> None:
    got = T.parse_selection("<Free Guy | sequel | Free Guy 2>\n[7]\ntri:zzz\n<Free Guy | director | Shawn Levy>",
                            {"candidates": CANDS})
    assert got.selected == ("tri:1",)
    assert got.ignored == ("<Free Guy | sequel | Free Guy 2>", "tri:zzz", "[7]")


def test_text_parsers_strip_chatter_and_reject_empty() -> None:
    assert T._parse_expand('Sure, here is a new query:\n**New Query:** "Where was Shawn Levy born?"\n', {}) \
        == "Where was Shawn Levy born?"
    assert T._parse_summary("Summary:\nFree Guy was directed by Shawn Levy.", {}) == "Free Guy was directed by Shawn Levy."
    assert T._parse_note("Here is the note:\n\nShawn Levy was born in 1968.", {}) == "Shawn Levy was born in 1968."
    assert T._parse_kg_note("Enhanced passage: A. B.", {}) == "A. B."
    with pytest.raises(LLMOutputError):
        T._parse_summary("   ", {})
    with pytest.raises(LLMOutputError):
        T._parse_expand("New query:", {})


def test_offline_heuristics(emb) -> None:
    sel = O.offline_select({"question": "Who directed Free Guy?", "candidates": CANDS, "top_m": 1,
                            "min_score": 0.0}, emb)
    assert sel.selected == ("tri:1",) and list(sel.offline_scores)[0] == "tri:1"
    none = O.offline_select({"question": "Who directed Free Guy?", "candidates": CANDS, "min_score": 9.0}, emb)
    assert none.selected == () and none.said_none
    summary, _ = T._offline_summarize({"triples": [dict(CANDS[2], round=2), dict(CANDS[0], round=1)]}, emb)
    assert summary == "Free Guy director Shawn Levy. Shawn Levy date of birth 23 July 1968."
    assert O.offline_expand("Who directed Free Guy?", summary, ["Free Guy", "Shawn Levy", "Montreal"]) \
        == "Who directed Free Guy? Shawn Levy"
    note = O.offline_passage_note({"question": "When was Shawn Levy born?", "max_sentences": 1, "passages": [
        {"id": "c1", "title": "x", "text": "Free Guy is a film. It made money."},
        {"id": "c2", "title": "y", "text": "Shawn Levy was born in 1968. He lives in Los Angeles."}]}, emb)
    assert note == "Shawn Levy was born in 1968."
    text, n = O.offline_kg_note("Shawn Levy directed Free Guy.", ["Free Guy director Shawn Levy.",
                                                                  "Shawn Levy date of birth 23 July 1968."])
    assert n == 1 and text.endswith("Shawn Levy date of birth 23 July 1968.")


def test_prompts_render_the_paper_inputs() -> None:
    first = T._render_select({"question": "Q?", "candidates": CANDS})
    assert first.startswith(P.SELECT_TRIPLES[:40]) and "[2] <Free Guy | publication date | 2021>" in first
    later = T._render_select({"question": "Q?", "candidates": CANDS[2:], "previous": ["<A | r | B>"]})
    assert later.startswith(P.UPDATE_TRIPLES[:40]) and "<A | r | B>" in later
    note = T._render_passage_note({"question": "Q?", "passages": [{"title": "T", "text": "body"}]})
    assert "[1] T\nbody" in note
    kg = T._render_kg_note({"question": "Q?", "note": "NOTE", "summary": "SUM"})
    assert "NOTE" in kg and "SUM" in kg


# ------------------------------------------------------------------------------------------------
@pytest.mark.data
@pytest.mark.skipif(not (DATA / "kg_2wiki_evidence" / "triples.tsv").exists(), reason="shared data absent")
def test_2wiki_curated_kg_offline(tmp_path: Path, emb) -> None:
    import_kg = pytest.importorskip("kgviz.index.import_kg")
    q = json.loads((DATA / "2wikimultihopqa" / "questions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    corpus = {}
    for line in (DATA / "2wikimultihopqa" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] in q["context_ids"]:
            corpus[row["id"]] = (row["title"], row["text"])
    store = GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=DIM)
    try:
        import_kg.import_kg(store, emb, DATA / "kg_2wiki_evidence")
        build(store, emb, [], [], list(corpus.values()))
        out, steps = run(store, OfflineLLM(), q["question"], emb)
        assert steps[0].data["kg_source"] == "curated"
        selected = [i for s in steps if s.kind == "select" for i in s.data.get("selected", [])]
        assert selected, "spreading activation selected nothing"
        assert store.existing_ids("Triple", selected) == set(selected)
        assert out.notes["subgraph_summary"] and out.items and out.items[0].kind == "note"
        # the question's evidence facts are in the KG: activation should reach at least one
        texts = {f"{h}|{r}|{t}".lower() for h, r, t in q["evidences"]}
        got = {f"{r['subject']}|{r['relation']}|{r['object']}".lower() for r in store.query(
            "MATCH (t:Triple) WHERE t.id IN $ids RETURN t.subject AS subject, t.relation AS relation, "
            "t.object AS object", {"ids": selected})}
        assert texts & got
    finally:
        store.close()


def test_kg_without_passages_builds_the_note_from_facts(tmp_path: Path, emb) -> None:
    store = GraphStore.open(tmp_path / "ws", embedder_id=emb.id, dim=DIM)
    build(store, emb, FILM_ENTITIES, FILM_TRIPLES)
    out, steps = run(store, OfflineLLM(), "Who directed Forbidden Ground?", emb)
    assert any(s.title == "Dual retrieval skipped" for s in steps)
    assert "Forbidden Ground director Pal Gabor." in out.items[0].text
    store.close()


# ------------------------------------------------------------------------------------------------
# the shared fixture graph (tests/support/fixture_graph.py, a corpus graph): end to end via run.py
@pytest.mark.parametrize("question, gold", [("Who designed the Harbour Library?", "Marta Ruiz"),
                                            ("Where was Owen Hale born?", "Cardiff")])
def test_end_to_end_on_the_shared_fixture_graph(kg, question: str, gold: str) -> None:
    from kgviz.run import Run, run_method

    run_ = run_method("kg-infused", question, kg.ctx)
    assert run_.ok, run_.error
    assert [s.kind for s in run_.trace][0] == "seed" and [s.kind for s in run_.trace][-2:] == ["context", "answer"]
    assert run_.trace[0].data["kg_source"] == "corpus"
    assert run_.answer == gold, run_.context.render()
    for s in run_.trace:
        by_table: dict[str, list[str]] = {}
        for n in s.nodes:
            by_table.setdefault(n.table, []).append(n.id)
        for table, ids in by_table.items():
            assert kg.exist(table, ids), (s.title, table)
    assert Run.from_dict(json.loads(json.dumps(run_.to_dict()))) == run_
