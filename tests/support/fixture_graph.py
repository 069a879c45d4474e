"""A small hand-built graph every method test can reuse.

Seven short documents (one with two chunks) about two unrelated clusters — an architect, her
library, Lisbon, the Tagus, Valencia; and a composer, his opera, Cardiff — loaded with the store's
bulk loaders exactly as the index pipeline would: Document/Chunk/Entity/Triple nodes with
HashingEmbedder embeddings, HAS_CHUNK, MENTIONS (chunk text names the entity), SUBJ/OBJ,
FROM_CHUNK, RELATED, and SIMILAR_DOC to each document's 3 most similar documents (weight =
cosine). Vector indexes on Document/Chunk/Entity/Triple and an FTS index on Chunk.

tests/methods/conftest.py provides it as the ``kg`` fixture (session-scoped, read-only by
convention: tests must not write to it); import names from here with ``from fixture_graph import ...``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kgviz.graph.store import GraphStore
from kgviz.methods.base import MethodContext
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.text import count_tokens

SIMILAR_K = 3

# title -> chunks; written for these tests
DOCS: dict[str, list[str]] = {
    "Marta Ruiz": ["Marta Ruiz is a Spanish architect born in 1961 in Valencia. She designed the Harbour "
                   "Library in Lisbon, which opened in 1998."],
    "Harbour Library": ["The Harbour Library is a public library on the waterfront of Lisbon. It was designed "
                        "by the architect Marta Ruiz.",
                        "The Harbour Library opened in 1998 and holds about 400,000 books. Its reading room "
                        "faces the Tagus."],
    "Lisbon": ["Lisbon is the capital and largest city of Portugal. The city lies at the mouth of the Tagus "
               "on the coast of the Atlantic Ocean."],
    "Valencia": ["Valencia is a port city in Spain on the Mediterranean Sea. It is the third largest city "
                 "in Spain."],
    "Tagus": ["The Tagus is the longest river of the Iberian Peninsula. It rises in Spain and flows into "
              "the Atlantic Ocean at Lisbon."],
    "Owen Hale": ["Owen Hale is a Welsh composer born in 1974 in Cardiff. He wrote the opera Quiet Harbour, "
                  "first staged in 2009."],
    "Cardiff": ["Cardiff is the capital of Wales. The city hosts the Millennium Centre, where Quiet Harbour "
                "was first staged."],
}

# (document title, chunk ord, subject, relation, object)
TRIPLES: list[tuple[str, int, str, str, str]] = [
    ("Marta Ruiz", 0, "Marta Ruiz", "born in", "Valencia"),
    ("Marta Ruiz", 0, "Marta Ruiz", "designed", "Harbour Library"),
    ("Marta Ruiz", 0, "Harbour Library", "located in", "Lisbon"),
    ("Harbour Library", 0, "Harbour Library", "located in", "Lisbon"),
    ("Harbour Library", 0, "Harbour Library", "designed by", "Marta Ruiz"),
    ("Harbour Library", 1, "Harbour Library", "faces", "Tagus"),
    ("Lisbon", 0, "Lisbon", "capital of", "Portugal"),
    ("Lisbon", 0, "Lisbon", "lies on", "Tagus"),
    ("Lisbon", 0, "Lisbon", "on the coast of", "Atlantic Ocean"),
    ("Valencia", 0, "Valencia", "located in", "Spain"),
    ("Valencia", 0, "Valencia", "lies on", "Mediterranean Sea"),
    ("Tagus", 0, "Tagus", "river of", "Iberian Peninsula"),
    ("Tagus", 0, "Tagus", "rises in", "Spain"),
    ("Tagus", 0, "Tagus", "flows into", "Atlantic Ocean"),
    ("Tagus", 0, "Tagus", "mouth at", "Lisbon"),
    ("Owen Hale", 0, "Owen Hale", "born in", "Cardiff"),
    ("Owen Hale", 0, "Owen Hale", "wrote", "Quiet Harbour"),
    ("Cardiff", 0, "Cardiff", "capital of", "Wales"),
    ("Cardiff", 0, "Quiet Harbour", "first staged at", "Millennium Centre"),
    ("Cardiff", 0, "Millennium Centre", "located in", "Cardiff"),
]


def doc_id(text: str) -> str:
    return "doc:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def entity_id(name: str) -> str:
    return "ent:" + " ".join(name.lower().split())


def triple_id(subject_id: str, relation: str, object_id: str) -> str:
    return "tri:" + hashlib.sha1(f"{subject_id}|{relation}|{object_id}".encode()).hexdigest()[:16]


@dataclass
class FixtureGraph:
    store: GraphStore
    embedder: HashingEmbedder
    ctx: MethodContext  # offline reasoner
    docs: dict[str, str] = field(default_factory=dict)  # title -> Document id
    chunks: dict[str, list[str]] = field(default_factory=dict)  # title -> Chunk ids in order
    entities: dict[str, str] = field(default_factory=dict)  # name -> Entity id
    triples: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (s, r, o) -> Triple id
    neighbours: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # doc id -> SIMILAR_DOC

    def exist(self, table: str, ids: list[str]) -> bool:
        return self.store.existing_ids(table, ids) == set(ids)


def build_fixture_graph(path: Path, embedder: HashingEmbedder) -> FixtureGraph:
    store = GraphStore.open(path, embedder_id=embedder.id, dim=embedder.dim)
    kg = FixtureGraph(store, embedder, MethodContext(store, Reasoner(OfflineLLM(), embedder)))
    doc_rows, chunk_rows, has_chunk = [], [], []
    chunk_text: dict[str, str] = {}
    for title, parts in DOCS.items():
        text = " ".join(parts)
        d = doc_id(text)
        kg.docs[title] = d
        doc_rows.append({"id": d, "title": title, "source": f"fixture/{title}.txt",
                         "sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text,
                         "n_tokens": count_tokens(text)})
        kg.chunks[title] = []
        for ord_, part in enumerate(parts):
            c = f"{d}#c{ord_}"
            kg.chunks[title].append(c)
            chunk_text[c] = part
            chunk_rows.append({"id": c, "doc_id": d, "ord": ord_, "text": part, "n_tokens": count_tokens(part)})
            has_chunk.append({"from": d, "to": c})
    doc_emb = embedder.embed([r["text"] for r in doc_rows])
    for row, e in zip(doc_rows, doc_emb):
        row["emb"] = e
    for row, e in zip(chunk_rows, embedder.embed([r["text"] for r in chunk_rows])):
        row["emb"] = e

    names = list(dict.fromkeys(n for t in TRIPLES for n in (t[2], t[4])))
    kg.entities = {n: entity_id(n) for n in names}
    entity_rows = [{"id": kg.entities[n], "name": n, "type": "", "description": "", "origin": "corpus",
                    "aliases": "", "n_mentions": sum(n in t for t in chunk_text.values()), "emb": e}
                   for n, e in zip(names, embedder.embed(names))]
    triple_rows, subj, obj, from_chunk, related = [], [], [], [], []
    for title, ord_, s, r, o in TRIPLES:
        sid, oid = kg.entities[s], kg.entities[o]
        t = triple_id(sid, r, oid)
        c = kg.chunks[title][ord_]
        if (s, r, o) in kg.triples:  # the same fact in two documents is one node (first provenance)
            continue
        kg.triples[(s, r, o)] = t
        triple_rows.append({"id": t, "subject": s, "relation": r, "object": o, "subject_id": sid,
                            "object_id": oid, "text": f"{s} {r} {o}", "chunk_id": c, "doc_id": kg.docs[title],
                            "sentence": "", "origin": "corpus"})
        subj.append({"from": t, "to": sid})
        obj.append({"from": t, "to": oid})
        from_chunk.append({"from": t, "to": c})
        related.append({"from": sid, "to": oid, "relation": r, "triple_id": t, "origin": "corpus"})
    for row, e in zip(triple_rows, embedder.embed([r["text"] for r in triple_rows])):
        row["emb"] = e
    mentions = [{"from": c, "to": kg.entities[n]} for c, text in chunk_text.items() for n in names if n in text]

    ids = [r["id"] for r in doc_rows]
    sims = np.asarray(doc_emb) @ np.asarray(doc_emb).T
    similar = []
    for i, d in enumerate(ids):
        order = [j for j in np.argsort(-sims[i], kind="stable") if j != i][:SIMILAR_K]
        kg.neighbours[d] = [(ids[j], float(sims[i, j])) for j in order]
        similar.extend({"from": d, "to": ids[j], "weight": float(sims[i, j])} for j in order)

    store.bulk_load_nodes("Document", doc_rows)
    store.bulk_load_nodes("Chunk", chunk_rows)
    store.bulk_load_nodes("Entity", entity_rows)
    store.bulk_load_nodes("Triple", triple_rows)
    store.bulk_load_rels("HAS_CHUNK", has_chunk, from_table="Document", to_table="Chunk")
    store.bulk_load_rels("MENTIONS", mentions, from_table="Chunk", to_table="Entity")
    store.bulk_load_rels("SUBJ", subj, from_table="Triple", to_table="Entity")
    store.bulk_load_rels("OBJ", obj, from_table="Triple", to_table="Entity")
    store.bulk_load_rels("FROM_CHUNK", from_chunk, from_table="Triple", to_table="Chunk")
    store.bulk_load_rels("RELATED", related, from_table="Entity", to_table="Entity")
    store.bulk_load_rels("SIMILAR_DOC", similar, from_table="Document", to_table="Document")
    for table in ("Document", "Chunk", "Entity", "Triple"):
        store.ensure_vector_index(table)
    store.ensure_fts_index("Chunk")
    return kg
