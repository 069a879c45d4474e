"""Import a curated knowledge graph (KG-Infused RAG uses one, §3): a TSV of facts plus an
optional JSONL of entity descriptions.

triples TSV: a header line naming the columns; ``head``, ``relation`` and ``tail`` are required,
``head_qid``, ``tail_qid``, ``split`` and ``question_id`` optional (the layout of
shared/data/kg_2wiki_evidence/triples.tsv; passing that folder reads its triples.tsv and
entities.jsonl). entities JSONL: one object per line with ``label``
(required), ``qid`` and ``description`` (optional).

Graph rows: Entity(origin='curated', id "kg:<qid>" or "kg:<normalised label>", n_mentions = the
number of kept facts it takes part in), Triple(origin=
'curated', no chunk), SUBJ/OBJ edges and RELATED(origin='curated'). Entities come from the kept
facts; the JSONL only adds descriptions and qids (so held-out facts do not come back through the
descriptions of entities only they mention; a description can still state a held-out fact about
an entity that other facts keep — a limit of the data, reported here).

Entity filter (KG-Infused App. B.1). The paper keeps an entity only when it has a description
(seeds are found by the query's similarity to descriptions, §3.4) and is the head of at least one
triple (spreading activation starts from heads). ``entity_filter``:

- ``"b1"`` (default, ours): the two conditions decide which entities are *entry points*: those
  that pass are embedded (name + description) and found by vector search; the others are imported
  without an embedding, as fact ends only. Their facts stay: Wikidata5M-KG has no literals, but
  here dates, nationalities and places are tails ("Pál Gábor  date of birth  2 November 1932") and
  often the answer. A name-only entity can then never be a seed, where before "1949", "John" or
  "Norwegian" matched a question's own words and took a seed slot: on kg_2wiki_evidence with the
  hashing embedder, 258 of the 531 top-3 seed slots of the 177 2Wiki questions went to entities
  failing B.1 with "none", 0 with "b1" (1,492 of 2,316 entities are entry points).
- ``"strict"``: the filter as the paper states it, one pass: the entities that fail on the facts as
  read are removed with every fact that touches them. (Repeating until every remaining entity heads
  a remaining fact empties shared/data/kg_2wiki_evidence completely: its chains end in literals.)
  On that KG one pass keeps 517 of 1,687 facts (1,492 of 2,316 entities); most answers (dates,
  places) go with the tails (benchmarks/import_kg_filter.py).
- ``"none"``: every entity embedded, a name-only one by its name (the behaviour before the filter).

The report counts entities and facts before and after (``entities_seen``, ``entry_points``,
``fact_ends_only``, ``entities_filtered``, ``rows_filtered``).

Bad lines (wrong number of columns, an empty head/relation/tail, invalid UTF-8, unreadable or
too deeply nested JSON, an over-long line, no label) are skipped and reported with their line
numbers; the other lines load. Only an unreadable file or a missing header stops the import. ``exclude_question_ids`` and ``splits`` hold out
facts, e.g. the "oracle" rows behind evaluation questions.
"""
from __future__ import annotations

import csv
import hashlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, get_args

import numpy as np

from kgviz.errors import BuildError, ConfigError, IngestError
from kgviz.graph import search, vector_home
from kgviz.graph.store import GraphStore
from kgviz.index.embed import embed_texts, entity_text
from kgviz.index.resolve import normalise_key
from kgviz.ingest.jsonl import BadLine, iter_lines, parse_object
from kgviz.ingest.limits import DEFAULT_LIMITS
from kgviz.providers.base import Embedder

CURATED = "curated"
REQUIRED = ("head", "relation", "tail")
OPTIONAL = ("head_qid", "tail_qid", "split", "question_id")
MAX_FIELD_CHARS = 500  # ours: longer "names" are almost surely a broken row
MAX_LINE_CHARS = 100_000  # ours: a triples row is three names; csv refuses fields over 131,072
EntityFilter = Literal["b1", "strict", "none"]
ENTITY_FILTERS: tuple[str, ...] = get_args(EntityFilter)


def _read(path: Path, what: str) -> bytes:
    """The file's bytes; lines are decoded one by one later, so a bad line costs that line only."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise IngestError(str(path), f"cannot read the {what} file ({exc.strerror or exc})",
                          hint="check the path") from exc


@dataclass
class ImportReport:
    rows_loaded: int = 0  # facts kept (after filters)
    rows_excluded: int = 0  # facts held out by question id or split
    bad_rows: list[tuple[int, str]] = field(default_factory=list)  # triples file (line, reason)
    bad_entity_rows: list[tuple[int, str]] = field(default_factory=list)  # entities file (line, reason)
    entities: int = 0  # Entity nodes inserted
    triples: int = 0  # Triple nodes inserted
    descriptions: int = 0  # inserted entities that got a description
    entity_filter: str = ""  # "b1" | "strict" | "none" (module doc)
    entities_seen: int = 0  # distinct entities in the facts read (before the filter)
    entry_points: int = 0  # entities kept with an embedding: vector search can find them
    fact_ends_only: int = 0  # entities kept without one ("b1": they fail App. B.1 but their facts stay)
    entities_filtered: int = 0  # entities removed ("strict")
    rows_filtered: int = 0  # facts removed with them ("strict")
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bad_rows"] = [list(r) for r in self.bad_rows]
        d["bad_entity_rows"] = [list(r) for r in self.bad_entity_rows]
        return d


@dataclass
class _Fact:
    head: str
    relation: str
    tail: str
    head_qid: str
    tail_qid: str


def read_triples_tsv(
    path: Path, exclude_question_ids: Iterable[str] | None = None, splits: Iterable[str] | None = None
) -> tuple[list[_Fact], ImportReport]:
    report = ImportReport()
    excluded = {q.strip() for q in exclude_question_ids or () if q.strip()}
    keep_splits = {s.strip() for s in splits} if splits is not None else None
    lines = list(iter_lines(_read(path, "triples")))
    while lines and lines[-1][1] == "":  # the newline that ends the file
        lines.pop()
    if not lines or lines[0][1] is None or not lines[0][1].strip():
        raise IngestError(str(path), "the triples file is empty or its header line is unreadable",
                          hint="expected a header: head<TAB>relation<TAB>tail")
    header = [h.strip().lower() for h in lines[0][1].split("\t")]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise IngestError(
            str(path), f"the header line lacks column(s) {missing}; it has {header}",
            hint="the first line must name the columns: head, relation, tail [, head_qid, tail_qid, split, question_id]",
        )
    col = {name: header.index(name) for name in REQUIRED + OPTIONAL if name in header}
    facts: list[_Fact] = []
    for n, line, reason in lines[1:]:
        if line is None:
            report.bad_rows.append((n, reason))
            continue
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            report.bad_rows.append((n, f"line is {len(line):,} characters, over the limit of {MAX_LINE_CHARS:,}"))
            continue
        try:
            cells = next(csv.reader([line], delimiter="\t", quoting=csv.QUOTE_NONE))
        except csv.Error as exc:
            report.bad_rows.append((n, f"unreadable row ({exc})"))
            continue
        if len(cells) != len(header):
            report.bad_rows.append((n, f"{len(cells)} columns, the header has {len(header)}"))
            continue
        get = {name: cells[i].strip() for name, i in col.items()}
        empty = [c for c in REQUIRED if not get[c]]
        if empty:
            report.bad_rows.append((n, f"empty {', '.join(empty)}"))
            continue
        if any(len(get[c]) > MAX_FIELD_CHARS for c in REQUIRED):
            report.bad_rows.append((n, f"a field is longer than {MAX_FIELD_CHARS} characters"))
            continue
        if get.get("question_id", "") in excluded or (keep_splits is not None and get.get("split", "") not in keep_splits):
            report.rows_excluded += 1
            continue
        if not normalise_key(get["head"]) or not normalise_key(get["tail"]):
            report.bad_rows.append((n, "head or tail has no letters or digits"))
            continue
        facts.append(_Fact(get["head"], " ".join(get["relation"].split()), get["tail"], get.get("head_qid", ""), get.get("tail_qid", "")))
    report.rows_loaded = len(facts)
    return facts, report


def read_entities_jsonl(path: Path, report: ImportReport) -> dict[str, dict[str, str]]:
    """{normalised label: {"label", "qid", "description"}}; bad lines go to the report."""
    out: dict[str, dict[str, str]] = {}
    for n, line, reason in iter_lines(_read(path, "entities")):
        if line is None:
            report.bad_entity_rows.append((n, reason))
            continue
        if not line.strip():
            continue
        obj = parse_object(line, DEFAULT_LIMITS)
        if isinstance(obj, BadLine):
            report.bad_entity_rows.append((n, obj.reason))
            continue
        label = obj.get("label")
        if type(label) is not str or not normalise_key(label) or len(label) > MAX_FIELD_CHARS:
            report.bad_entity_rows.append((n, "no 'label'"))
            continue
        qid, desc = obj.get("qid"), obj.get("description")
        out.setdefault(normalise_key(label), {
            "label": label.strip(),
            "qid": qid.strip()[:MAX_FIELD_CHARS] if isinstance(qid, str) else "",
            "description": desc.strip() if isinstance(desc, str) else "",
        })
    return out


def import_kg(
    store: GraphStore,
    embedder: Embedder,
    triples_path: str | Path,
    entities_path: str | Path | None = None,
    *,
    exclude_question_ids: Iterable[str] | None = None,
    splits: Iterable[str] | None = None,
    batch_size: int = 256,
    entity_filter: EntityFilter = "b1",
) -> ImportReport:
    """Load a curated KG into ``store``. Idempotent: existing nodes and edges are skipped.
    ``entity_filter``: how KG-Infused App. B.1's entity filter applies (module doc)."""
    if entity_filter not in ENTITY_FILTERS:
        raise ConfigError(f"entity_filter must be one of {', '.join(ENTITY_FILTERS)}, not {entity_filter!r}")
    t0 = time.perf_counter()
    triples_path = Path(triples_path)
    if triples_path.is_dir():  # a folder laid out like shared/data/kg_2wiki_evidence
        folder, triples_path = triples_path, triples_path / "triples.tsv"
        if entities_path is None and (folder / "entities.jsonl").exists():
            entities_path = folder / "entities.jsonl"
    if (embedder.id, int(embedder.dim)) != (store.embedder_id, int(store.dim)):
        raise BuildError(
            f"the graph uses embedder {store.embedder_id} (dim {store.dim}); got {embedder.id} (dim {embedder.dim})"
        )
    facts, report = read_triples_tsv(triples_path, exclude_question_ids, splits)
    known = read_entities_jsonl(Path(entities_path), report) if entities_path else {}

    entities: dict[str, dict[str, Any]] = {}

    def entity(label: str, qid: str) -> str:
        key = normalise_key(label)
        info = known.get(key, {})
        qid = qid or info.get("qid", "")
        eid = f"kg:{qid}" if qid else f"kg:{key}"
        row = entities.get(eid)
        if row is None:
            row = entities[eid] = {
                "id": eid, "name": info.get("label") or label, "type": "", "origin": CURATED,
                "description": info.get("description", ""), "aliases": [], "n_mentions": 0,
            }
        if label != row["name"] and label not in row["aliases"]:
            row["aliases"].append(label)
        row["n_mentions"] += 1
        return eid

    triples: dict[str, dict[str, Any]] = {}
    n_rows: dict[str, int] = {}  # triple id -> the rows that state it (a fact may repeat)
    for f in facts:
        s, o = entity(f.head, f.head_qid), entity(f.tail, f.tail_qid)
        digest = hashlib.sha1(f"{CURATED}|{s}|{f.relation.lower()}|{o}".encode("utf-8")).hexdigest()
        tid = f"tri:{digest[:16]}"
        n_rows[tid] = n_rows.get(tid, 0) + 1
        triples.setdefault(tid, {
            "id": tid, "subject": entities[s]["name"], "relation": f.relation, "object": entities[o]["name"],
            "subject_id": s, "object_id": o, "text": f"{entities[s]['name']} {f.relation} {entities[o]['name']}",
            "chunk_id": "", "doc_id": "", "sentence": "", "origin": CURATED,
        })
    entry = _apply_entity_filter(entities, triples, n_rows, entity_filter, report)
    ent_rows = [dict(r, aliases="|".join(r["aliases"])) for r in entities.values()]
    have = store.existing_ids("Entity", [r["id"] for r in ent_rows])
    new_ent = [r for r in ent_rows if r["id"] not in have]
    tri_rows = list(triples.values())
    have = store.existing_ids("Triple", [r["id"] for r in tri_rows])
    new_tri = [r for r in tri_rows if r["id"] not in have]
    # a table that keeps its vectors in the vector files only (kgviz.graph.vector_home) gets its rows
    # without vectors and the vectors in its files; rows an earlier import loaded but whose vectors
    # never reached the files (it stopped in between) are embedded again
    in_files = {t for t in ("Entity", "Triple") if vector_home.in_files(vector_home.state(store, t))}
    ent_todo = _without_vectors(store, "Entity", ent_rows, new_ent, "Entity" in in_files)
    tri_todo = _without_vectors(store, "Triple", tri_rows, new_tri, "Triple" in in_files)
    embedded = [r for r in ent_todo if r["id"] in entry]  # the others are fact ends only: no vector
    vectors = embed_texts(
        embedder, [entity_text(r["name"], r["description"]) for r in embedded] + [r["text"] for r in tri_todo], batch_size
    )
    for row, vec in zip(embedded + tri_todo, vectors):
        row["emb"] = vec
    kept = {t: [(r["id"], r.pop("emb")) for r in rows if r.get("emb") is not None]
            for t, rows in (("Entity", ent_todo), ("Triple", tri_todo)) if t in in_files}
    for row in new_ent + new_tri:
        row.setdefault("emb", None)
    report.entities = store.bulk_load_nodes("Entity", new_ent)
    report.descriptions = sum(1 for r in new_ent if r["description"])
    report.triples = store.bulk_load_nodes("Triple", new_tri)
    store.bulk_load_rels("SUBJ", [{"from": t["id"], "to": t["subject_id"]} for t in tri_rows], from_table="Triple", to_table="Entity")
    store.bulk_load_rels("OBJ", [{"from": t["id"], "to": t["object_id"]} for t in tri_rows], from_table="Triple", to_table="Entity")
    store.bulk_load_rels(
        "RELATED",
        [{"from": t["subject_id"], "to": t["object_id"], "relation": t["relation"], "triple_id": t["id"], "origin": CURATED} for t in tri_rows],
        from_table="Entity", to_table="Entity",
    )
    for table in ("Entity", "Triple"):
        if table in kept:  # into the files, merged with the vectors already there
            pairs = kept[table]
            matrix = np.array([v for _, v in pairs], dtype=np.float32).reshape(len(pairs), int(store.dim))
            search.prepare_exact_search(store, table, ([i for i, _ in pairs], matrix))
        else:
            store.ensure_vector_index(table)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _without_vectors(store: GraphStore, table: str, rows: list[dict[str, Any]], new: list[dict[str, Any]],
                     in_files: bool) -> list[dict[str, Any]]:
    """The rows to embed: the new ones, and for a table that keeps its vectors in files also
    the rows already in the table that the files lack (a fact end without a vector is among
    them and stays without one: only entry points are embedded)."""
    if not in_files:
        return new
    _, missing = store.stored_vectors(table, [r["id"] for r in rows])
    lacking = set(missing)
    return [r for r in rows if r["id"] in lacking]


def _apply_entity_filter(entities: dict[str, dict[str, Any]], triples: dict[str, dict[str, Any]],
                         n_rows: dict[str, int], mode: str, report: ImportReport) -> set[str]:
    """Apply App. B.1 in ``mode`` (module doc) to the entities and facts about to be imported, in
    place ("strict" deletes); returns the ids of the entities to embed (the entry points)."""
    report.entity_filter = mode
    report.entities_seen = len(entities)

    def passing() -> set[str]:
        heads = {t["subject_id"] for t in triples.values()}
        return {e for e, row in entities.items() if row["description"].strip() and e in heads}

    ok = passing()
    if mode == "strict":  # one pass (module doc)
        gone = [t for t, row in triples.items() if row["subject_id"] not in ok or row["object_id"] not in ok]
        for t in gone:
            report.rows_filtered += n_rows[t]
            del triples[t]
        for e in [e for e in entities if e not in ok]:
            del entities[e]
            report.entities_filtered += 1
        report.rows_loaded -= report.rows_filtered
        for row in entities.values():  # n_mentions counts the kept facts only
            row["n_mentions"] = 0
        for t, row in triples.items():
            for e in (row["subject_id"], row["object_id"]):
                entities[e]["n_mentions"] += n_rows[t]
    entry = set(entities) if mode == "none" else ok
    report.entry_points = len(entry)
    report.fact_ends_only = len(entities) - len(entry)
    return entry
