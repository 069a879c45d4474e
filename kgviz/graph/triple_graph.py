"""The triple graph held in memory: Triple and Entity rows and the SUBJ / OBJ / RELATED edges,
read once per state of the database (``GraphStore.derived``) and answered from there.

kg-rag's Chain of Explorations reads a neighbourhood per hop and resolves the nodes it reaches
(``kgviz.graph.neighbourhood``). As Kùzu statements those reads cost ~165 ms per question on
HotpotQA's 1,965 passages (24 statements; an id list of more than a few ids makes Kùzu scan the
whole table, ``kgviz.graph.batching``), while every row they can return fits in a few arrays:
28.7k triples, 17.9k entities and 85k edges load in ~0.3 s and ~20 MB. Here a neighbourhood is
an index into a CSR-style adjacency (edges grouped by their anchor) and the rows are taken from
Arrow columns, so a read costs what its rows cost to make.

Each read returns what the Cypher statement it stands for returns (the same rows, keys and
values; ``tests/graph/test_triple_graph.py`` compares them on graphs with cycles, hubs, parallel
edges and self-loops). Rows come back in edge order (Kùzu returned them in no fixed order: the
callers sort them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kgviz.errors import GraphStoreError
from kgviz.graph import read_model
from kgviz.graph.protocol import GraphStore

TRIPLE_COLUMNS = ("id", "subject", "relation", "object", "subject_id", "object_id", "text", "sentence",
                  "chunk_id", "origin", "kind")
Q_ALL_TRIPLES = "MATCH (t:Triple) RETURN " + ", ".join(f"t.{c} AS {c}" for c in TRIPLE_COLUMNS)
Q_ALL_ENTITIES = "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.origin AS origin, e.description AS description"
# label(r) is the side ("SUBJ" | "OBJ") the neighbourhood rows carry
Q_EDGES_TO_ENTITY = "MATCH (t:Triple)-[r:SUBJ|OBJ]->(x:Entity) RETURN t.id AS t, label(r) AS side, x.id AS x"
Q_EDGES_TO_TRIPLE = "MATCH (t:Triple)-[r:SUBJ|OBJ]->(x:Triple) RETURN t.id AS t, label(r) AS side, x.id AS x"
Q_ALL_RELATED = ("MATCH (a:Entity)-[r:RELATED]->(b:Entity) RETURN a.id AS src, b.id AS dst, "
                 "r.relation AS relation, r.triple_id AS triple_id, r.origin AS origin")
QUERIES = (Q_ALL_TRIPLES, Q_ALL_ENTITIES, Q_EDGES_TO_ENTITY, Q_EDGES_TO_TRIPLE, Q_ALL_RELATED)
DERIVED_KEY = "graph.triple_graph"
SIDES = ("SUBJ", "OBJ")


@dataclass(frozen=True)
class _Adjacency:
    """Edges grouped by anchor: the edges of anchor ``i`` are ``order[ptr[i]:ptr[i + 1]]``
    (positions into the edge arrays, in load order within an anchor)."""

    ptr: np.ndarray
    order: np.ndarray

    @classmethod
    def group(cls, anchor: np.ndarray, n_anchors: int) -> _Adjacency:
        order = np.argsort(anchor, kind="stable")
        ptr = np.zeros(n_anchors + 1, dtype=np.int64)
        np.cumsum(np.bincount(anchor, minlength=n_anchors), out=ptr[1:])
        return cls(ptr, order)

    def edges(self, i: int) -> np.ndarray:
        return self.order[self.ptr[i]:self.ptr[i + 1]]


def _positions(ids: pa.Array, index_of: pa.Array) -> np.ndarray:
    """Row number in ``index_of`` of each id (-1 when absent)."""
    found = pc.index_in(ids, value_set=index_of)
    return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _column(table: pa.Table, name: str) -> pa.Array:
    return table.column(name).combine_chunks()


class TripleGraph:
    """Triple and Entity rows and the edges between them, as Arrow columns and index arrays."""

    def __init__(self, triples: pa.Table, entities: pa.Table, to_entity: pa.Table, to_triple: pa.Table,
                 related: pa.Table) -> None:
        self.triples = triples
        self.entities = entities
        tri_ids, ent_ids = _column(triples, "id"), _column(entities, "id")
        self.triple_at: dict[str, int] = {i: n for n, i in enumerate(tri_ids.to_pylist())}
        self.entity_list: list[str] = ent_ids.to_pylist()
        self.entity_at: dict[str, int] = {i: n for n, i in enumerate(self.entity_list)}
        self.entity_names: list[Any] = _column(entities, "name").to_pylist()
        self.entity_origins: list[Any] = _column(entities, "origin").to_pylist()
        self.entity_descriptions: list[Any] = _column(entities, "description").to_pylist()
        self.entity_origin_set = frozenset(self.entity_origins)
        # SUBJ/OBJ edges into an entity and into a triple: (from triple row, side code) by anchor
        self.at_entity = self._edges(to_entity, tri_ids, ent_ids)
        self.at_triple = self._edges(to_triple, tri_ids, tri_ids)
        # RELATED edges: endpoints as entity rows, the rest as Python values (few per anchor)
        src, dst = _positions(_column(related, "src"), ent_ids), _positions(_column(related, "dst"), ent_ids)
        self.rel_src, self.rel_dst = src, dst
        self.rel_values = {c: _column(related, c).to_pylist() for c in ("relation", "triple_id", "origin")}
        self.related_out = _Adjacency.group(src, len(ent_ids))
        self.related_in = _Adjacency.group(dst, len(ent_ids))

    @staticmethod
    def _edges(edges: pa.Table, tri_ids: pa.Array, anchor_ids: pa.Array) -> tuple[np.ndarray, np.ndarray, _Adjacency]:
        frm = _positions(_column(edges, "t"), tri_ids)
        # 0 = SUBJ, 1 = OBJ (SIDES); a label that is neither is an error, never a side
        labels = _column(edges, "side")
        if len(labels) and not pc.all(pc.is_in(labels, value_set=pa.array(SIDES))).as_py():
            raise GraphStoreError(f"unexpected SUBJ/OBJ edge labels {sorted(set(labels.to_pylist()) - set(SIDES))}")
        side = np.asarray(pc.equal(labels, SIDES[1]).to_numpy(zero_copy_only=False), dtype=np.int8)
        anchor = _positions(_column(edges, "x"), anchor_ids)
        return frm, side, _Adjacency.group(anchor, len(anchor_ids))

    @classmethod
    def load(cls, store: GraphStore) -> TripleGraph:
        """The graph's tables, mapped from the workspace where stored for this graph (else read
        from Kùzu and stored: ``kgviz.graph.read_model``)."""
        return cls(*(read_model.table(store, q) for q in QUERIES))

    # -- reads -----------------------------------------------------------------------------------
    def triple_rows(self, rows: Sequence[int] | np.ndarray) -> list[dict[str, Any]]:
        """The Triple columns of ``rows`` (row numbers), each a new dict."""
        if not len(rows):
            return []
        return self.triples.take(pa.array(rows, type=pa.int64())).to_pylist()

    def triple_columns(self, rows: Sequence[int] | np.ndarray, names: Sequence[str]) -> list[dict[str, Any]]:
        """The Triple columns ``names`` of ``rows`` (row numbers), each a new dict with its keys in
        ``names``' order (only those columns are taken and converted)."""
        if not len(rows):
            return []
        taken = self.triples.select(list(names)).take(pa.array(rows, type=pa.int64()))
        columns = [taken.column(n).to_pylist() for n in names]
        return [dict(zip(names, values)) for values in zip(*columns)]

    def triples_at(self, kind: str, anchors: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """{anchor: rows of ``(t:Triple)-[r:SUBJ|OBJ]->(x)`` with x.id = anchor}, each row
        ``{"side": label(r), <Triple columns>}``; ``kind`` is the anchor's table ("Entity" or
        "Triple"); an anchor that is not a node of that table has none."""
        frm, side, adj = self.at_entity if kind == "Entity" else self.at_triple
        at = self.entity_at if kind == "Entity" else self.triple_at
        picked: list[tuple[str, np.ndarray]] = []
        for a in anchors:
            n = at.get(a)
            picked.append((a, adj.edges(n) if n is not None else np.zeros(0, dtype=np.int64)))
        edges = np.concatenate([e for _, e in picked]) if picked else np.zeros(0, dtype=np.int64)
        rows = iter(self.triple_rows(frm[edges]))
        sides = iter(side[edges].tolist())
        return {a: [{"side": SIDES[next(sides)], **next(rows)} for _ in range(len(e))] for a, e in picked}

    def related(self, direction: str, anchors: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """{anchor: rows of ``(a:Entity)-[r:RELATED]->(b:Entity)`` with a.id (``direction``
        "out") or b.id ("in") = anchor}, each with the columns of neighbourhood.Q_RELATED_*."""
        adj = self.related_out if direction == "out" else self.related_in
        ids, names, origins, vals = self.entity_list, self.entity_names, self.entity_origins, self.rel_values
        out: dict[str, list[dict[str, Any]]] = {}
        for a in anchors:
            n = self.entity_at.get(a)
            rows = []
            for e in (adj.edges(n).tolist() if n is not None else []):
                s, d = int(self.rel_src[e]), int(self.rel_dst[e])
                rows.append({"src": ids[s], "src_name": names[s], "dst": ids[d], "dst_name": names[d],
                             "relation": vals["relation"][e], "triple_id": vals["triple_id"][e],
                             "origin": vals["origin"][e], "src_origin": origins[s], "dst_origin": origins[d]})
            out[a] = rows
        return out

    def nodes(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """Rows of the ids that are nodes: a Triple as ``{"tbl": "Triple", <Triple columns>}``,
        then the Entities as ``{"tbl": "Entity", "id", "name", "origin"}`` (an id of both tables
        gives its Triple row only), each table's rows in the order of ``ids``."""
        tri = [n for i in ids if (n := self.triple_at.get(i)) is not None]
        out = [{"tbl": "Triple", **r} for r in self.triple_rows(tri)]
        for i in ids:
            n = self.entity_at.get(i)
            if n is not None and i not in self.triple_at:
                out.append({"tbl": "Entity", "id": i, "name": self.entity_names[n], "origin": self.entity_origins[n]})
        return out


def triple_graph(store: GraphStore) -> TripleGraph:
    """The store's triple graph, loaded once per state of the database."""
    graph: TripleGraph = store.derived(DERIVED_KEY, TripleGraph.load)
    return graph
