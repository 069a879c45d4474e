"""Explore queries against a small hand-made graph in a temp Kùzu database."""
from __future__ import annotations

import pytest

from kgviz.errors import KgvizError
from kgviz.graph.store import GraphStore
from kgviz.providers.embedders import HashingEmbedder
from kgviz.viz import explore
from kgviz.viz.graph_html import graph_html

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> GraphStore:
    emb = HashingEmbedder(64)
    st = GraphStore.open(tmp_path_factory.mktemp("explore") / "db", embedder_id=emb.id, dim=emb.dim)
    names = ["Agnes Vohl", "Tarrow", "Ossel Marine Institute", "Kellhaven University", HOSTILE, "Henrik Saal"]
    # hub: Agnes Vohl; Henrik Saal is 2 hops away (via Kellhaven University)
    ents = [{"id": f"ent:{i}", "name": n, "type": "person" if i in (0, 5) else "place", "description": f"d{i}",
             "origin": "corpus", "aliases": "", "n_mentions": 10 - i, "emb": emb.embed([n])[0].tolist()}
            for i, n in enumerate(names)]
    st.bulk_load_nodes("Entity", ents)
    st.bulk_load_nodes("Document", [{"id": "doc:1", "title": "Agnes Vohl", "source": "x", "sha256": "0", "text": "t",
                                     "n_tokens": 1}])
    st.execute("CREATE (:Chunk {id: $id, doc_id: $d, ord: 0, text: $t, n_tokens: 7})",
               {"id": "doc:1#c0", "d": "doc:1", "t": "Agnes Vohl was born in Tarrow."})
    st.bulk_load_nodes("Extraction", [{"chunk_id": "doc:1#c0", "mode": "offline", "prompt_name": "EXTRACT", "status": "ok",
                                       "raw": "(Agnes Vohl | born in | Tarrow)", "n_triples": 1, "n_malformed": 0}])
    rel = [(0, 1, "born in"), (0, 2, "founded"), (0, 3, "studied at"), (0, 4, "knows"), (3, 5, "employed"),
           (0, 3, "graduated from")]
    st.bulk_load_nodes("Triple", [{"id": f"tri:{k}", "subject": names[a], "relation": r, "object": names[b],
                                   "subject_id": f"ent:{a}", "object_id": f"ent:{b}", "text": f"{names[a]} {r} {names[b]}",
                                   "chunk_id": "doc:1#c0", "doc_id": "doc:1", "sentence": f"S{k}.", "origin": "corpus"}
                                  for k, (a, b, r) in enumerate(rel)])
    st.bulk_load_rels("RELATED", [{"from": f"ent:{a}", "to": f"ent:{b}", "relation": r, "triple_id": f"tri:{k}",
                                   "origin": "corpus"} for k, (a, b, r) in enumerate(rel)],
                      from_table="Entity", to_table="Entity")
    st.bulk_load_rels("MENTIONS", [{"from": "doc:1#c0", "to": "ent:0"}], from_table="Chunk", to_table="Entity")
    return st


def test_search_by_name_is_case_insensitive_and_ranked(store: GraphStore) -> None:
    hits = explore.search_entities(store, "  VOHL ")
    assert [h.id for h in hits] == ["ent:0"] and hits[0].match == "name"
    hits = explore.search_entities(store, "a", limit=3)
    assert len(hits) == 3 and hits[0].n_mentions >= hits[1].n_mentions >= hits[2].n_mentions
    assert explore.search_entities(store, "   ") == []


def test_search_text_is_a_parameter_not_cypher(store: GraphStore) -> None:
    assert explore.search_entities(store, "' OR 1=1 RETURN e //") == []
    assert [h.id for h in explore.search_entities(store, "<script>")] == ["ent:4"]


def test_vector_fallback_when_no_name_matches(store: GraphStore) -> None:
    emb = HashingEmbedder(64)
    hits = explore.search_entities(store, "Tarrowe", embedder=emb, limit=3)
    assert hits and all(h.match == "vector" for h in hits)
    assert hits[0].score is not None and "similarity" in hits[0].label()
    assert explore.search_entities(store, "Tarrowe") == []  # no embedder: no fallback


def test_neighbourhood_hops_cap_and_caption(store: GraphStore) -> None:
    one = explore.neighbourhood(store, "ent:0", hops=1, cap=50)
    ids = [n.id for n in one.graph.nodes]
    assert ids[0] == "ent:0" and one.graph.nodes[0].role == "seed"
    assert set(ids) == {"ent:0", "ent:1", "ent:2", "ent:3", "ent:4"}
    merged = [e for e in one.graph.edges if (e.source, e.target) == ("ent:0", "ent:3")]
    assert len(merged) == 1 and "studied at" in merged[0].title and "graduated from" in merged[0].title
    two = explore.neighbourhood(store, "ent:0", hops=2, cap=50)
    assert "ent:5" in [n.id for n in two.graph.nodes] and two.graph.total_nodes == 6
    capped = explore.neighbourhood(store, "ent:0", hops=2, cap=3)
    assert capped.graph.shown_nodes == 3 and capped.graph.total_nodes == 6
    assert capped.caption() == "showing 3 of 6 nodes within 2 hop(s)"
    assert "ent:5" not in [n.id for n in capped.graph.nodes]  # farther nodes are cut first
    assert set(capped.names) == {n.id for n in capped.graph.nodes}
    with pytest.raises(KgvizError):
        explore.neighbourhood(store, "ent:0", hops=3)


def test_neighbourhood_html_escapes_entity_names(store: GraphStore) -> None:
    nb = explore.neighbourhood(store, "ent:0", hops=1, cap=50)
    page = graph_html(nb.graph.nodes, nb.graph.edges)
    assert HOSTILE not in page and "ent:4" not in page


def test_entity_details_provenance(store: GraphStore) -> None:
    d = explore.entity_details(store, "ent:0")
    assert d.entity["name"] == "Agnes Vohl"
    assert {t["relation"] for t in d.triples} == {"born in", "founded", "studied at", "knows", "graduated from"}
    assert all(t["sentence"] for t in d.triples)
    assert [c.id for c in d.chunks] == ["doc:1#c0"]
    assert d.chunks[0].doc_title == "Agnes Vohl" and "Tarrow" in d.chunks[0].text
    assert d.chunks[0].extraction is not None and d.chunks[0].extraction["raw"].startswith("(Agnes")
    with pytest.raises(KgvizError):
        explore.entity_details(store, "ent:nope")


def test_degrees(store: GraphStore) -> None:
    assert sorted(explore.degrees(store)) == [1, 1, 1, 1, 3, 5]  # two relations 0->3 count twice
