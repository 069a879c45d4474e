"""The fixed reads of kg-rag's Chain of Explorations: a hop's neighbourhood and node lookups.

Since issue 29 they are answered from the triple graph held in memory
(``kgviz.graph.triple_graph``, loaded once per database state): on HotpotQA the statements below
cost ~165 ms of a question's ~170 ms. The statements stay as the definition of what each read
returns (``*_by_statement``; the tests compare both on tricky graphs). What follows describes
them.

A hop reads the neighbourhood of all its anchors at once: each neighbourhood query takes a list
of anchors ($ids), names the anchor of every row and has no LIMIT; kg-rag sorts each anchor's rows
as its old per-anchor ``ORDER BY ... LIMIT $limit`` query did (``ORDER``) and keeps the first
``fetch_limit``. One statement per anchor and kind (~7 per hop) used to dominate the retrieval:
a Kùzu statement's fixed cost (parse, plan, transaction: 1-3 ms) outweighs these small reads.
The queries are not merged into one UNION ALL statement: padding the columns a branch lacks with
NULL crashed the process (segfault, kuzu 0.11.3).

Only the statements in ``QUERIES`` ever run here (LLM text never becomes a query); which form
runs follows ``kgviz.graph.batching``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence, cast

from kgviz.errors import MethodError
from kgviz.graph import batching
from kgviz.graph.triple_graph import QUERIES as LOAD_QUERIES
from kgviz.graph.triple_graph import triple_graph
from kgviz.graph.protocol import GraphStore
from kgviz.graph.rows import NeighbourRow

_TRIPLE_COLS = (
    "t.id AS id, t.subject AS subject, t.relation AS relation, t.object AS object, "
    "t.subject_id AS subject_id, t.object_id AS object_id, t.text AS text, "
    "t.sentence AS sentence, t.chunk_id AS chunk_id, t.origin AS origin, t.kind AS kind"
)
_RELATED_COLS = ("a.id AS src, a.name AS src_name, b.id AS dst, b.name AS dst_name, r.relation AS relation, "
                 "r.triple_id AS triple_id, r.origin AS origin, a.origin AS src_origin, b.origin AS dst_origin")


def _forms(pattern: str, anchor: str, returns: str) -> tuple[str, str]:
    """(IN form, UNWIND form) of a neighbourhood query."""
    return (f"MATCH {pattern} WHERE {anchor}.id IN $ids RETURN {anchor}.id AS anchor, {returns}",
            f"UNWIND $ids AS k MATCH {pattern} WHERE {anchor}.id = k RETURN k AS anchor, {returns}")


Q_TRIPLES_AT_ENTITY = _forms("(t:Triple)-[r:SUBJ|OBJ]->(x:Entity)", "x", f"label(r) AS side, {_TRIPLE_COLS}")
# hypernodes: triples whose subject or object is the anchor triple
Q_TRIPLES_AT_TRIPLE = _forms("(t:Triple)-[r:SUBJ|OBJ]->(x:Triple)", "x", f"label(r) AS side, {_TRIPLE_COLS}")
# Two directed queries, not one undirected match: in an undirected pattern Kùzu's
# start_node(r)/end_node(r) follow the pattern's order, not the edge's, so the direction is lost.
Q_RELATED_OUT = _forms("(a:Entity)-[r:RELATED]->(b:Entity)", "a", _RELATED_COLS)
Q_RELATED_IN = _forms("(a:Entity)-[r:RELATED]->(b:Entity)", "b", _RELATED_COLS)
# Row order of each per-anchor query (its old ORDER BY, then a tie-break of ours, since Kùzu left
# ties in no fixed order). Kùzu orders strings bytewise with NULL last, as ``sort_key`` does.
# Q_HYPER_AT_ENTITY has no statement: kg-rag puts it together from the two triple queries.
ORDER: dict[str, tuple[str, ...]] = {
    "Q_TRIPLES_AT_ENTITY": ("id", "side"), "Q_TRIPLES_AT_TRIPLE": ("id", "side"),
    "Q_HYPER_AT_ENTITY": ("id", "inner", "side"),
    "Q_RELATED_OUT": ("dst", "relation", "triple_id"), "Q_RELATED_IN": ("src", "relation", "triple_id"),
}
# Node ids of either table (a multi-label match; Triple columns are NULL on an Entity, ``name``
# on a Triple).
Q_NODES_BY_ID = (
    f"MATCH (t:Triple:Entity) WHERE t.id IN $ids RETURN label(t) AS tbl, {_TRIPLE_COLS}, t.name AS name",
    f"UNWIND $ids AS k MATCH (t:Triple:Entity) WHERE t.id = k RETURN label(t) AS tbl, {_TRIPLE_COLS}, t.name AS name",
)
Q_TRIPLE_BY_PK = f"MATCH (t:Triple {{id: $id}}) RETURN 'Triple' AS tbl, {_TRIPLE_COLS}"
Q_ENTITY_BY_PK = "MATCH (t:Entity {id: $id}) RETURN 'Entity' AS tbl, t.id AS id, t.name AS name, t.origin AS origin"
# Stored embeddings of the candidates. Not store.get_embeddings' shape of query: fetching t.emb
# with the neighbourhood rows cost more, the semi-masked scan there reads whole batches of vectors.
Q_TRIPLE_EMB_BY_ID = (
    "MATCH (t:Triple) WHERE t.id IN $ids AND t.emb IS NOT NULL RETURN t.id AS id, t.emb AS emb",
    "UNWIND $ids AS k MATCH (t:Triple) WHERE t.id = k AND t.emb IS NOT NULL RETURN t.id AS id, t.emb AS emb",
)
Q_TRIPLE_EMB_BY_PK = "MATCH (t:Triple {id: $id}) WHERE t.emb IS NOT NULL RETURN t.id AS id, t.emb AS emb"
# Whether the graph holds an imported curated KG (kg-rag leaves it out unless use_curated).
Q_ENTITY_ORIGIN_EXISTS = "MATCH (e:Entity) WHERE e.origin = $origin RETURN e.id AS id LIMIT 1"
NEIGHBOURHOOD = {"Q_TRIPLES_AT_ENTITY": Q_TRIPLES_AT_ENTITY, "Q_TRIPLES_AT_TRIPLE": Q_TRIPLES_AT_TRIPLE,
                 "Q_RELATED_OUT": Q_RELATED_OUT, "Q_RELATED_IN": Q_RELATED_IN}
QUERIES: tuple[str, ...] = (  # LOAD_QUERIES: what the triple graph in memory is read with
    *LOAD_QUERIES,
    *Q_TRIPLES_AT_ENTITY, *Q_TRIPLES_AT_TRIPLE, *Q_RELATED_OUT, *Q_RELATED_IN, *Q_NODES_BY_ID, Q_TRIPLE_BY_PK,
    Q_ENTITY_BY_PK, *Q_TRIPLE_EMB_BY_ID, Q_TRIPLE_EMB_BY_PK, Q_ENTITY_ORIGIN_EXISTS,
)


def sort_key(row: NeighbourRow, cols: tuple[str, ...]) -> tuple[bool | str, ...]:
    """Kùzu's order of the row on ``cols``: per column NULL last, then the string. Python
    compares strings by code point, which is the bytewise order of their UTF-8 (no encoding per
    comparison: sorting a hub entity's rows was ~8% of kg-rag at 10,000 passages)."""
    values: Mapping[str, object] = row  # ``cols`` names columns the row's query returns (ORDER)
    if len(cols) == 2:
        a, b = values[cols[0]], values[cols[1]]
        return a is None, str(a or ""), b is None, str(b or "")
    return tuple(x for c in cols for x in (values[c] is None, str(values[c] or "")))


def _query(store: GraphStore, cypher: str, params: dict[str, Any]) -> list[NeighbourRow]:
    if cypher not in QUERIES:  # guards future edits: kg-rag runs these fixed queries only
        raise MethodError("kg-rag tried to run a query outside its fixed set")
    return cast("list[NeighbourRow]", store.query(cypher, params))


def _id_list(store: GraphStore, forms: tuple[str, str], ids: list[str], *, vectors: bool = False) -> list[NeighbourRow]:
    rows: list[NeighbourRow] = []
    for batch in batching.batches(ids):
        rows += _query(store, forms[batching.use_unwind(len(batch), vectors=vectors)], {"ids": batch})
    return rows


def neighbourhood(store: GraphStore, name: str, anchors: Sequence[str]) -> dict[str, list[NeighbourRow]]:
    """{anchor: every row of neighbourhood query ``name`` at it} (rows without the anchor column,
    unordered; every anchor present, with [] when it has none), from the triple graph in memory."""
    if name not in NEIGHBOURHOOD:
        raise MethodError(f"kg-rag asked for an unknown neighbourhood read: {name}")
    g = triple_graph(store)
    if name == "Q_TRIPLES_AT_ENTITY":
        got = g.triples_at("Entity", anchors)
    elif name == "Q_TRIPLES_AT_TRIPLE":
        got = g.triples_at("Triple", anchors)
    else:
        got = g.related("out" if name == "Q_RELATED_OUT" else "in", anchors)
    return cast("dict[str, list[NeighbourRow]]", got)


def neighbourhood_by_statement(store: GraphStore, name: str, anchors: Sequence[str]) -> dict[str, list[NeighbourRow]]:
    """``neighbourhood`` read by its Cypher statement (what the in-memory read must equal)."""
    out: dict[str, list[NeighbourRow]] = {a: [] for a in anchors}
    if anchors:
        for row in _id_list(store, NEIGHBOURHOOD[name], list(anchors)):
            out[row.pop("anchor")].append(row)
    return out


def nodes_by_id(store: GraphStore, ids: Sequence[str]) -> list[NeighbourRow]:
    """Rows for node ids of either table: ``tbl`` ("Triple" or "Entity") plus the triple columns
    (a Triple) or id, name and origin (an Entity). Ids of neither table are left out. From the
    triple graph in memory."""
    return cast("list[NeighbourRow]", triple_graph(store).nodes(list(ids)))


def nodes_by_statement(store: GraphStore, ids: Sequence[str]) -> list[NeighbourRow]:
    """``nodes_by_id`` read by Cypher statements (what the in-memory read must equal, as kg-rag
    reads it: the multi-label form also gives an id's Entity row when it is a Triple too, and
    NULL triple columns on an Entity)."""
    todo = list(ids)
    if len(todo) > batching.PK_LOOKUP_MAX:
        return _id_list(store, Q_NODES_BY_ID, todo)
    rows = [r for i in todo for r in _query(store, Q_TRIPLE_BY_PK, {"id": i})]
    found = {r["id"] for r in rows}
    return rows + [r for i in todo if i not in found for r in _query(store, Q_ENTITY_BY_PK, {"id": i})]


def triple_vectors(store: GraphStore, ids: Sequence[str]) -> list[NeighbourRow]:
    """id, emb of the triples among ``ids`` that have an embedding: from the exact search's
    vector file wherever it holds the stored vector bit for bit (``kgviz.graph.search.stored_vectors``:
    a binary search, where Kùzu's id-list read scans the whole vector column and even a primary-key
    lookup cost 1-8 ms a triple on HotpotQA), the others from Kùzu."""
    found, todo = store.stored_vectors("Triple", list(ids))
    rows = [cast(NeighbourRow, {"id": i, "emb": v}) for i, v in found.items()]
    if len(todo) > batching.PK_LOOKUP_MAX:
        return rows + _id_list(store, Q_TRIPLE_EMB_BY_ID, todo, vectors=True)
    return rows + [r for i in todo for r in _query(store, Q_TRIPLE_EMB_BY_PK, {"id": i})]


def has_entities_of_origin(store: GraphStore, origin: str) -> bool:
    """True when some Entity has ``origin`` ("curated": an imported KG), from the triple graph in
    memory (the statement scanned every entity of a graph without one: ~10 ms on HotpotQA)."""
    return origin in triple_graph(store).entity_origin_set


def has_entities_of_origin_by_statement(store: GraphStore, origin: str) -> bool:
    """``has_entities_of_origin`` read by its statement."""
    return bool(_query(store, Q_ENTITY_ORIGIN_EXISTS, {"origin": origin}))
