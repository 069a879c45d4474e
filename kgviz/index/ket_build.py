"""KET-RAG's part of a build (kgviz.index.pipeline), paper 004 Algorithm 3 in pipeline order:

  chunk -> knn (KNN graph over old + new chunks, PageRank, core chunks; in memory) ->
  extract (core chunks only) -> resolve -> embed -> write -> doc_layer ->
  ket (with an LLM: skeleton descriptions, Algorithm 1 line 3; KNN edges, Chunk.pagerank/core,
  sub-chunks, keywords) -> index

The knn stage embeds the new chunks itself (the semantic neighbours need them before extraction)
and hands the vectors to the embed stage, so no chunk is embedded twice; the ket stage reads them
back from the embed stage's spill for the sub-chunks that are a whole chunk (same text, an embedder
whose rows depend on their text alone: kgviz.index.ket_keywords.KnownVectors). Its plan is kept in the
workspace (kgviz.index.ket_plan): a build that resumes an interrupted one, or repeats a finished
one, has the same chunks and reuses it instead of computing the quadratic KNN graph again. The
ket stage ends by storing KET-RAG's keyword view (kgviz.graph.ket_view), so the first question
after a build maps it instead of making it.

Incremental builds: the KNN graph and PageRank always cover every chunk, so adding documents can
move old chunks into the core set; their documents are not re-extracted (the report warns and
counts them). Meta ``ket.skeleton_beta`` is therefore measured, not assumed: the fraction of
chunks that have an Extraction row.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from kgviz.errors import BuildError, GraphStoreError
from kgviz.graph import ket_view, reads
from kgviz.graph.protocol import GraphStore
from kgviz.index import cells, ket_plan, memory, steps
from kgviz.index.embed import embed_texts
from kgviz.index.ket_describe import describe_skeleton, write_descriptions
from kgviz.index.ket_keywords import KeywordLayer, KnownVectors, VectorBlocks
from kgviz.index.ket import (META_KEYWORD_SIGNATURE, CorePlan, build_keywords, ket_info, plan_core, skeleton_cost,
                             stored_chunk_vectors, stored_chunks, write_core)
from kgviz.index.knn import LEXICAL, SEMANTIC
from kgviz.index.params import BuildParams, BuildReport
from kgviz.index.spill import VectorSpill
from kgviz.types import Chunk, Usage

Emit = Callable[[str, int, int, str], None]  # (stage, done, total, message)


def layer_rows(layer: KeywordLayer) -> ket_view.LayerRows:
    """The keyword layer's rows as ket_view.parts_from_layer takes them."""
    subs = layer.subchunks

    def sub_vectors(positions: np.ndarray) -> np.ndarray:
        if subs.vectors is None:  # no sub-chunk was made (no text): never asked for a row
            raise BuildError("the keyword layer's sub-chunks have no vectors")
        return subs.vectors.take(positions)

    def kw_vectors(positions: np.ndarray) -> np.ndarray:  # read through the layer: ``release`` lets them go
        return layer.keywords.vectors.take(positions)

    def release(kind: str, stop: int | None) -> None:  # read into the view: nothing reads them again
        if kind == "keywords" and stop is not None:
            if layer.keywords.vectors.drop_before(stop):
                memory.give_back()  # the dropped blocks' pages, not kept in the C heap
        elif kind == "keywords":
            layer.keywords.vectors = VectorBlocks(layer.keywords.vectors.dim, layer.keywords.vectors.block_rows)
        else:
            subs.vectors = None

    return ket_view.LayerRows(
        layer.keywords.ids, layer.keywords.words, kw_vectors,
        subs.ids, subs.chunk_ids, subs.n_tokens, sub_vectors, layer.has_keyword.kw, layer.has_keyword.sub,
        release_vectors=release)


def _index_counts(store: GraphStore) -> dict[str, int]:
    return reads.ket_index_counts(store)


class KetBuild:
    def __init__(self, store: GraphStore, embedder: Any, params: BuildParams, report: BuildReport, emit: Emit) -> None:
        self.store, self.embedder, self.params, self.report, self.emit = store, embedder, params, report, emit
        self.enabled = params.ket_enabled
        self.ket = params.ket_params() if self.enabled else None
        self.plan: CorePlan | None = None
        self.plan_source = ""  # ket_plan.REUSED, or "computed (why)"
        self.chunk_vectors: np.ndarray | None = None
        self.spilled: Callable[[np.ndarray], np.ndarray] | None = None  # rows of chunk_vectors, once spilled
        self.new_chunks: list[Chunk] = []
        self.describe_report: Any = None  # kgviz.index.ket_describe.DescribeReport of this build

    # -- knn stage ------------------------------------------------------------------------------------
    def plan_stage(self, new_chunks: Sequence[Chunk]) -> None:
        self.new_chunks = list(new_chunks)
        if not self.enabled:
            if new_chunks and ket_info(self.store):
                self.report.warnings.append(
                    f"this graph has a KET-RAG index from an earlier build that does not cover the {len(new_chunks)} "
                    "new chunks: build with KET enabled to refresh it")
            self.emit("knn", 1, 1, "KET-RAG off: every chunk is extracted")
            return
        assert self.ket is not None
        t0 = time.perf_counter()
        n = len(self.new_chunks)
        self.chunk_vectors = embed_texts(self.embedder, [c.text for c in self.new_chunks], self.params.embed_batch_size,
                                         lambda d: self.emit("knn", d, n + 1, f"embedding {d} of {n} new chunks"),
                                         workers=self.params.workers)
        self.report.usage_by_stage["knn"] = Usage(calls=-(-n // self.params.embed_batch_size),
                                                  latency_s=time.perf_counter() - t0)
        self.plan, self.plan_source = self._plan(self.chunk_vectors)
        self.emit("knn", n + 1, n + 1, f"{len(self.plan.knn)} KNN edges over {len(self.plan.ids)} chunks "
                                       f"(neighbours: {cells.describe(len(self.plan.ids))}); "
                                       f"{len(self.plan.core)} core chunks (β={self.ket.beta:g}, {self.ket.selection}); "
                                       f"plan {self.plan_source}")

    def _plan(self, new_vectors: np.ndarray) -> tuple[CorePlan, str]:
        """The plan over the stored and the new chunks: the one an earlier build kept for exactly
        these chunks and parameters (kgviz.index.ket_plan: a resumed build), else computed (and
        kept); with which it was."""
        assert self.ket is not None
        rows = reads.all_chunks(self.store)
        n_stored = len(rows)
        ids = [r["id"] for r in rows] + [c.id for c in self.new_chunks]
        texts = [r["text"] for r in rows] + [c.text for c in self.new_chunks]
        del rows
        order = sorted(range(len(ids)), key=ids.__getitem__)  # plan_core's order
        sorted_ids = [ids[i] for i in order]
        key = ket_plan.plan_key(sorted_ids, [texts[i] for i in order], self.ket, self.store.embedder_id,
                                int(self.store.dim))
        plan, why = ket_plan.load(self.store.path, key, sorted_ids, self.ket)
        if plan is not None:
            return plan, why
        stored = stored_chunk_vectors(self.store, ids[:n_stored])
        emb = np.concatenate([stored, new_vectors]) if len(stored) else new_vectors
        plan = plan_core(ids, texts, emb, self.ket)
        not_kept = ket_plan.save(self.store.path, key, plan)
        return plan, f"computed ({why})" + (f"; not kept: {not_kept}" if not_kept else "")

    def spill_chunk_vectors(self, spill: VectorSpill) -> None:
        """The embed stage has spilled ``chunk_vectors`` (the new chunks', in their order) as the
        spill's first Chunk rows: let them go, and read them back from there when the keyword
        layer takes them (``KnownVectors``)."""
        if self.chunk_vectors is not None and spill.count("Chunk") == len(self.new_chunks) == len(self.chunk_vectors):
            self.spilled = spill.rows("Chunk").__getitem__
        self.chunk_vectors = None

    def _known_vectors(self) -> KnownVectors | None:
        """The new chunks' spilled vectors, each with the text the knn stage embedded it from."""
        if self.spilled is None or not self.new_chunks:
            return None
        return KnownVectors({c.id: i for i, c in enumerate(self.new_chunks)}, [c.text for c in self.new_chunks],
                            self.spilled)

    def to_extract(self, chunks: list[Chunk]) -> list[Chunk]:
        """The chunks the extract stage should send to the model: the core ones (line 9)."""
        if self.plan is None:
            return chunks
        return [c for c in chunks if c.id in self.plan.core]

    # -- ket stage ------------------------------------------------------------------------------------
    def describes(self, reasoner: Any) -> bool:
        """Whether ``describe_stage`` asks for descriptions (and so reads the build's resolved rows)."""
        return self.enabled and self.params.ket_descriptions and not reasoner.is_offline

    def describe_stage(self, reasoner: Any, acc: Any, names: dict[str, str], titles: dict[str, str]) -> None:
        """With an LLM: descriptions of the skeleton's entities and relationships (Algorithm 1 line
        3, kgviz.index.ket_describe), written before the KET index so an interrupted build that
        reaches the keyword layer has them."""
        self.describe_report = None
        if not self.describes(reasoner):
            return
        rows, report = describe_skeleton(
            reasoner, acc, self.new_chunks, names, titles, workers=self.params.workers,
            embed_batch_size=self.params.embed_batch_size,
            progress=lambda d, t, msg: self.emit("ket", 0, 3, f"describing the skeleton: {d} of {t} chunks"))
        write_descriptions(self.store, rows, reasoner.mode)
        self.report.usage_by_stage["describe"] = report.usage
        self.describe_report = report
        if report.failed:
            self.report.warnings.append(
                f"{report.failed} of {report.items} skeleton descriptions failed (those entities and relationships "
                f"keep their source text); first: {report.failures[0][0]}: {report.failures[0][1]}")

    def write_stage(self) -> None:
        if not self.enabled or self.plan is None or self.ket is None:
            self.emit("ket", 1, 1, "KET-RAG off")
            return
        store = self.store
        t0 = time.perf_counter()
        before = _index_counts(store)
        plan = self._current_plan()
        extracted = store.existing_ids("Extraction", plan.ids)
        fraction = len(extracted) / len(plan.ids) if plan.ids else 1.0
        with steps.marked(store, "ket_core") as interrupted:
            write_core(store, plan, skeleton_beta=fraction)  # always rewritten whole
        if interrupted:
            steps.record_repair(self.report, "ket_core")
        self.emit("ket", 1, 3, f"KNN edges and core marks written; the KG covers {fraction:.0%} of the chunks")
        new_ids = {c.id for c in self.new_chunks}
        late = sorted(plan.core - extracted - new_ids)
        if late:
            self.report.warnings.append(
                f"{len(late)} chunks of earlier builds became core chunks but were not extracted (e.g. {late[0]}): "
                "rebuild the workspace to extract them")
        written: list[KeywordLayer] = []  # the layer just written, for the keyword view
        # the layer's vectors go to the keyword view only (ket_view.META_LAYER_VECTORS), so the
        # view is stored inside the step's mark: a build killed between the two redoes both
        with steps.marked(store, "keywords") as interrupted:
            lost = self._view_lost()
            stats, rebuilt = self._keywords(plan, interrupted or lost, vectors=False, on_written=written.append)
            t_view = time.perf_counter()
            view = self._store_keyword_view(written)
            if rebuilt and view not in (ket_view.STORED, ket_view.UP_TO_DATE):
                # no view holds the vectors: the layer goes into the graph with them, so that the
                # first question makes the view from the graph, as before
                self._keywords(plan, True, vectors=True)
            view_seconds = time.perf_counter() - t_view
        if interrupted:
            steps.record_repair(self.report, "keywords")
        if lost:
            self.report.warnings.append("KET-RAG's keyword view, the only copy of the keyword layer's vectors, was "
                                        "missing or damaged: the keyword layer and its view were made again")
        extract = self.report.usage_by_stage.get("extract", Usage())
        cost = skeleton_cost([(c.id, c.text, c.n_tokens) for c in self.new_chunks], plan.core, self.ket.beta,
                             expected_output_ratio=self.params.expected_output_ratio,
                             actual_input=extract.input_tokens, actual_output=extract.output_tokens)
        self.report.ket = {
            "beta": self.ket.beta, "selection": self.ket.selection, "k": self.ket.k,
            "tau": self.ket.resolved_tau(self.params.chunk_tokens), "n_chunks": len(plan.ids),
            "n_core": len(plan.core), "skeleton_beta": round(fraction, 6), "core_not_extracted": len(late),
            "knn_edges": {kind: int(np.count_nonzero(plan.knn.kind == kind)) for kind in (LEXICAL, SEMANTIC)},
            "keywords": stats, "keywords_rebuilt": rebuilt, "cost": cost.to_dict(),
            "plan_seconds": round(plan.seconds, 3), "write_seconds": round(time.perf_counter() - t0, 3),
            "replanned": plan is not self.plan,
            # whether the knn stage reused the plan an earlier build kept for these chunks (a
            # resumed build) or computed it, and why (kgviz.index.ket_plan)
            "plan": self.plan_source if plan is self.plan else "computed (the chunks changed during the build)",
            # what this build changed, not the totals above: with a shared workspace the totals
            # include every earlier build, and a rebuilt keyword layer replaces the old one
            "added": {k: v - before.get(k, 0) for k, v in _index_counts(store).items()},
            "keyword_view": view, "view_seconds": round(view_seconds, 3),
        }
        if self.describe_report is not None:
            self.report.ket["descriptions"] = self.describe_report.to_dict()
        self.emit("ket", 3, 3, f"{stats.get('keywords', 'unchanged')} keywords, "
                               f"{stats.get('subchunks', 'unchanged')} sub-chunks; keyword view {view}")

    def _keywords(self, plan: CorePlan, force: bool, *, vectors: bool,
                  on_written: Callable[[KeywordLayer], None] | None = None) -> tuple[dict[str, int], bool]:
        """build_keywords over the plan's chunks; ``vectors``: the layer's vectors into the graph too."""
        assert self.ket is not None
        return build_keywords(
            self.store, self.embedder, self.ket, self.params.chunk_tokens, ids=plan.ids,
            docs=[c.split("#")[0] for c in plan.ids], texts=self._texts(plan),
            batch_size=self.params.embed_batch_size, force=force, workers=self.params.workers,
            write_batch_rows=self.params.write_batch_rows,
            progress=lambda stage, d, t, msg: self.emit("ket", 2, 3, f"{msg}: {d} of {t}"),
            on_written=on_written, known=self._known_vectors(), vectors=vectors)

    def _view_lost(self) -> bool:
        """Whether the stored keyword layer keeps its vectors only in a keyword view that is not
        stored (deleted or damaged since): the layer must be made again."""
        signature = self.store.get_meta(META_KEYWORD_SIGNATURE)
        if signature is None or self.store.get_meta(ket_view.META_LAYER_VECTORS) != ket_view.IN_VIEW:
            return False
        return not ket_view.is_stored(self.store, signature)

    def _store_keyword_view(self, written: list[KeywordLayer]) -> str:
        """KET-RAG's keyword view (kgviz.graph.ket_view) made and stored now, so that the first
        question maps it instead of making it (issue 29: 12.7 s of the first ket-rag question at
        10,000 passages); what happened. Made from the layer this build has just ``written``
        (the same arrays as from the graph, without reading every vector back out of Kùzu), else,
        when the stored layer was kept, from the graph. A view that cannot be stored is logged,
        and the first question makes it, as before. One that cannot be made (Kùzu failed to read
        the layer) is a warning of the build, not its end: the graph is whole without it, and the
        first question tries again (a build failing here would leave the workspace unfinished for
        good)."""
        signature = self.store.get_meta(META_KEYWORD_SIGNATURE)
        if signature is None:
            written.clear()
            return "no keyword layer"
        try:
            done = self._ensure_view(signature, written)
            if done != ket_view.UP_TO_DATE:
                # the view's arrays and the Arrow tables it was read from were made and released:
                # their pages go back to the system rather than stay under the index stage's peak
                memory.give_back(arrow=True)
            return done
        except GraphStoreError as err:
            self.report.warnings.append(f"KET-RAG's keyword view was not made ({err}): the first KET question "
                                        "makes it")
            return f"{ket_view.NOT_STORED}: {err}"

    def _ensure_view(self, signature: str, written: list[KeywordLayer]) -> str:
        """ket_view.ensure_stored, from the written layer when there is one; the layer is let go
        when this returns."""
        make = None
        if written:
            layer, dim = written.pop(), int(self.store.dim)
            layer.keywords.release_descriptions()  # written: the view reads no description
            make = lambda: ket_view.parts_from_layer(layer_rows(layer), dim)  # noqa: E731
        return ket_view.ensure_stored(self.store, signature, make)

    def _current_plan(self) -> CorePlan:
        """The knn stage's plan when it still covers exactly the stored chunks, else a new plan
        over all of them. The index must describe every chunk present, whatever wrote them since
        the knn stage (a build that ran without the workspace's build lock, a build with KET off,
        a killed build's leftovers); a plan over only the chunks one build saw left the KNN graph
        and keywords half built when two builds interleaved."""
        assert self.plan is not None and self.ket is not None
        ids = reads.all_chunk_ids(self.store)
        if ids == self.plan.ids:
            return self.plan
        stored_ids, _, texts, emb = stored_chunks(self.store)
        self.report.warnings.append(
            f"the chunks changed during the build ({len(self.plan.ids)} planned, {len(stored_ids)} stored): "
            "the KNN graph, core chunks and keywords were recomputed over every stored chunk")
        return plan_core(stored_ids, texts, emb, self.ket)

    def _texts(self, plan: CorePlan) -> list[str]:
        new = {c.id: c.text for c in self.new_chunks}
        missing = [c for c in plan.ids if c not in new]
        stored = reads.chunk_texts(self.store, missing)
        return [new[c] if c in new else stored.get(c, "") for c in plan.ids]
