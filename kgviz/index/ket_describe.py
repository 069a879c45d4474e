"""KET-RAG Algorithm 1 line 3 with an LLM: a description of every skeleton entity and relationship.

KG-Index has the LLM extract entities and relationships from each chunk, and "for each extracted
entity or relationship x, the LLM generates a textual description t_x along with its embedding
φ(t_x)" (§2.3); the skeleton channel then finds seed entities by those embeddings and puts the
descriptions in its context (Algorithm 2). kgviz's extraction prompt writes triples only, so an
LLM build asks for each entity and relationship of each extracted (core) chunk, through the
reasoner (cache, recordings):

  for each chunk with facts, for each of its entities and relationships: prompt
  DESCRIBE_SKELETON(chunk, item) -> one or two sentences -> grounding check -> Description rows
  (text + embedding)

One call per item, as the box has it ("for each extracted entity or relationship x"); a chunk's
calls share the chunk as their prefix, so a server with a prompt cache processes it once.

* Items: the entities the chunk's facts name (MENTIONS order) and the relationships read from it
  (FROM_CHUNK order): facts between two entities, as the paper's relationships are edges between
  entities (a hypernode, kgviz's fact about a fact, keeps its text); at most
  ``MAX_ENTITIES_PER_CHUNK`` and ``MAX_RELATIONSHIPS_PER_CHUNK`` (ours: bounds the reply; the
  others keep their source text).
* A line that only repeats its item (a small model copying the list) is no description.
* Grounding (``kgviz.index.ground.check_description``, the fact check's rules): a description
  whose names or numbers are not in its chunk (or document title) is left out and counted, as a
  copy of the prompt's example or as not in the text; the item keeps its source sentences.
* An item described from several chunks (one entity, or one fact, in two chunks) joins its
  descriptions in chunk order, capped at ``MAX_DESCRIPTION_CHARS`` (ours; Graph-RAG has the LLM
  summarise them instead).
* Embedded text: an entity's name and description; a relationship's triple text and description.
* A call that fails (provider error, empty reply) is counted and named in the report; its item
  keeps its source text. A missing key or a recording miss stops the build: extraction's rule,
  one helper for both (``kgviz.index.ask``). There is no Extraction-like row: a re-run asks again, and the LLM cache answers.
* An entity or fact described by an earlier build keeps that description (and vector): rows are
  keyed by target, like Entity rows, and Kùzu cannot SET an indexed vector.

Offline nothing is asked (there is no model): the skeleton keeps the source-sentence descriptions
of ``kgviz.index.resolve`` (ours), which the KET trace marks as such.
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from kgviz.graph.protocol import GraphStore
from kgviz.index.ask import Asked, ask
from kgviz.index.assemble import Assembled
from kgviz.index.embed import embed_texts, entity_text
from kgviz.index.ground import NOT_IN_TEXT, PROMPT_EXAMPLE, REPEATS_ITEM, Source, check_description
from kgviz.prompts.ket_describe import (DESCRIBE_SKELETON_ORIGIN, DESCRIBE_SKELETON_PROMPT_NAME,
                                        DESCRIBE_SKELETON_TASK_NAME)
from kgviz.reasoning import Reasoner
from kgviz.types import Chunk, Usage

META_DESCRIPTIONS = "ket.descriptions"  # JSON: prompt, origin, mode of the build that wrote them
MAX_ENTITIES_PER_CHUNK = 12  # ours: bounds the reply (a 0.5B model on 2 busy cores wrote ~2 tokens/s)
MAX_RELATIONSHIPS_PER_CHUNK = 12  # ours
MAX_DESCRIPTION_CHARS = 800  # ours: as an entity's source-sentence description
MAX_LISTED = 50  # ours: rejected descriptions and failed chunks named in the report; counts cover all

Progress = Callable[[int, int, str], None]


@dataclass
class DescribeReport:
    """What the description calls of one build gave."""

    chunks: int = 0  # chunks whose items were asked about
    items: int = 0  # entities and relationships asked about (one call each)
    failed: int = 0  # calls that failed or whose reply held no description
    entities: int = 0  # entities given a description (rows written by this build)
    relationships: int = 0
    accepted: int = 0  # per-chunk descriptions kept
    rejected: dict[str, int] = field(default_factory=lambda: {PROMPT_EXAMPLE: 0, NOT_IN_TEXT: 0, REPEATS_ITEM: 0})
    usage: Usage = field(default_factory=Usage)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (chunk id, item: why), the first MAX_LISTED
    rejected_lines: list[tuple[str, str, str]] = field(default_factory=list)  # (chunk id, item, why)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["usage"] = self.usage.to_dict()
        d["prompt"] = DESCRIBE_SKELETON_PROMPT_NAME
        d["origin"] = DESCRIBE_SKELETON_ORIGIN
        return d


@dataclass(frozen=True)
class ChunkItems:
    chunk: Chunk
    entities: list[tuple[str, str]]  # (entity id, name)
    relationships: list[tuple[str, str, str, str, str]]  # (triple id, subject, relation, object, text)


def chunk_items(acc: Assembled, chunks: Sequence[Chunk], names: dict[str, str]) -> list[ChunkItems]:
    """Per chunk with facts: the entities its facts name and the facts read from it, capped."""
    ents: dict[str, list[str]] = {}
    for c, e in acc.mentions:
        ents.setdefault(c, []).append(e)
    rels: dict[str, list[str]] = {}
    for t, c in acc.from_chunk:
        rels.setdefault(c, []).append(t)
    out = []
    for ch in chunks:
        e_ids, t_ids = ents.get(ch.id, []), rels.get(ch.id, [])
        if not e_ids and not t_ids:
            continue
        e_ids = e_ids[:MAX_ENTITIES_PER_CHUNK]
        t_ids = [t for t in t_ids if not acc.triples[t].subject_is_triple
                 and not acc.triples[t].object_is_triple][:MAX_RELATIONSHIPS_PER_CHUNK]
        entities = [(e, names.get(e) or (acc.entities[e].name if e in acc.entities else e)) for e in e_ids]
        relationships = [(t, acc.triples[t].subject, acc.triples[t].relation, acc.triples[t].object, acc.triples[t].text)
                         for t in t_ids]
        out.append(ChunkItems(ch, entities, relationships))
    return out


@dataclass(frozen=True)
class _Item:
    label: str  # E1.. / R1.. within its chunk (the report names rejected ones by it)
    target: str  # Entity or Triple id
    kind: str  # 'entity' | 'relationship'
    asked: str  # as the prompt names it: a name, or "subject | relation | object"
    name: str  # as the Description row and its embedding name it: a name, or the triple's text


def _items(items: ChunkItems) -> list[_Item]:
    return ([_Item(f"E{i}", e, "entity", name, name) for i, (e, name) in enumerate(items.entities, 1)]
            + [_Item(f"R{i}", t, "relationship", f"{s} | {r} | {o}", text)
               for i, (t, s, r, o, text) in enumerate(items.relationships, 1)])


def _describe_chunk(reasoner: Reasoner, items: ChunkItems) -> list[tuple[_Item, Asked]]:
    """One call per item, in order: the chunk is the prompts' shared prefix."""
    return [(it, ask(reasoner, DESCRIBE_SKELETON_TASK_NAME, text=items.chunk.text, kind=it.kind, item=it.asked))
            for it in _items(items)]


def describe_skeleton(reasoner: Reasoner, acc: Assembled, chunks: Sequence[Chunk], names: dict[str, str],
                      titles: dict[str, str], *, workers: int = 1, embed_batch_size: int = 256,
                      progress: Progress | None = None) -> tuple[list[dict[str, Any]], DescribeReport]:
    """Description rows (with ``emb``) for the skeleton items of ``chunks``, and the report.
    ``names``: entity names already in the graph; ``titles``: {document id: title}."""
    report = DescribeReport()
    if reasoner.is_offline:
        return [], report
    todo = chunk_items(acc, chunks, names)
    report.chunks = len(todo)
    texts: dict[str, list[str]] = {}  # target -> grounded descriptions, in chunk order
    where: dict[str, list[str]] = {}  # target -> chunk ids
    label_of: dict[str, tuple[str, str]] = {}  # target -> (kind, name)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="kgviz-describe") as pool:
        for n, (items, answers) in enumerate(zip(todo, pool.map(lambda it: _describe_chunk(reasoner, it), todo)), 1):
            source = Source(items.chunk.text, titles.get(items.chunk.doc_id, ""))
            for it, asked in answers:
                report.items += 1
                report.usage = report.usage + asked.usage
                if asked.failed:
                    report.failed += 1
                    if len(report.failures) < MAX_LISTED:
                        report.failures.append((items.chunk.id, f"{it.label} {it.name}: {asked.error}"))
                    continue
                text = str(asked.value)
                why = check_description(text, source, item=it.asked)
                if why is not None:
                    report.rejected[why.reason] += 1
                    if len(report.rejected_lines) < MAX_LISTED:
                        report.rejected_lines.append((items.chunk.id, f"{it.label} {it.name}",
                                                      f"{why.reason}: {why.name!r} in {text[:120]!r}"))
                    continue
                report.accepted += 1
                if text not in texts.setdefault(it.target, []):
                    texts[it.target].append(text)
                where.setdefault(it.target, []).append(items.chunk.id)
                label_of.setdefault(it.target, (it.kind, it.name))
            if progress is not None:
                progress(n, len(todo), f"{items.chunk.id}: described")
    rows = []
    for target, parts in texts.items():
        kind, name = label_of[target]
        rows.append({"id": f"desc:{target}", "target": target, "kind": kind, "name": name,
                     "text": _joined(parts), "chunk_ids": "|".join(dict.fromkeys(where[target])),
                     "prompt_name": DESCRIBE_SKELETON_PROMPT_NAME, "mode": reasoner.mode})
    report.entities = sum(r["kind"] == "entity" for r in rows)
    report.relationships = len(rows) - report.entities
    embedded = [entity_text(r["name"], r["text"]) if r["kind"] == "entity" else f"{r['name']}: {r['text']}"
                for r in rows]
    t0 = time.perf_counter()
    matrix = embed_texts(reasoner.embedder, embedded, embed_batch_size)
    report.usage = report.usage + Usage(latency_s=time.perf_counter() - t0)
    for row, vec in zip(rows, matrix):
        row["emb"] = vec
    return rows, report


def _joined(parts: list[str]) -> str:
    out: list[str] = []
    size = 0
    for p in parts:
        if out and size + len(p) + 1 > MAX_DESCRIPTION_CHARS:
            break
        out.append(p)
        size += len(p) + 1
    return " ".join(out)[:MAX_DESCRIPTION_CHARS]


def write_descriptions(store: GraphStore, rows: list[dict[str, Any]], mode: str) -> int:
    """Insert the rows (a target described before keeps its row) and record, in Meta, that this
    graph's skeleton has LLM-written descriptions. Returns the rows inserted."""
    if not rows:
        return 0
    n = store.bulk_load_nodes("Description", rows)
    store.set_meta(META_DESCRIPTIONS, json.dumps({"prompt": DESCRIBE_SKELETON_PROMPT_NAME,
                                                  "origin": DESCRIBE_SKELETON_ORIGIN, "mode": mode},
                                                 sort_keys=True))
    return n
