"""build(): provenance, idempotence, resume after cancel, LLM path with bad replies, retries."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from tests.support.index_fakes import ScriptedLLM, corpus, failing_for, offline_reply
from kgviz.errors import AuthenticationError, BuildCancelled, EmbedderMismatchError
from kgviz.graph.store import GraphStore
from kgviz.index import graph_write as gw
from kgviz.offline.extract import HEURISTIC_NAME
from kgviz.index.pipeline import STAGES, BuildParams, ProgressEvent, build
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

EMB = HashingEmbedder(64)
# small chunks so the four stories give several chunks each (overlap 0 keeps counts simple)
# ket_descriptions off: these tests count extraction calls (the skeleton's descriptions are one more call
# per chunk, tested in test_ket_describe.py)
SMALL = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=2, batch_size=2, similar_docs_k=2, ket_descriptions=False)


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator:
    stores: list[GraphStore] = []

    def make(name: str = "ws") -> GraphStore:
        s = GraphStore.open(tmp_path / name, embedder_id=EMB.id, dim=EMB.dim)
        stores.append(s)
        return s

    yield make
    for s in stores:
        s.close()


def offline() -> Reasoner:
    return Reasoner(OfflineLLM(), EMB)


def test_offline_build_provenance_and_hypernodes(open_store) -> None:
    store = open_store()
    events: list[ProgressEvent] = []
    report = build(corpus(), store, offline(), SMALL, progress=events.append)
    c = report.counts
    assert report.new_documents == 4 and c["Document"] == 4 and c["Chunk"] == report.new_chunks > 4
    assert c["Extraction"] == c["Chunk"] and c["HAS_CHUNK"] == c["Chunk"]
    assert c["Triple"] == report.new_triples > 15 and c["SUBJ"] == c["OBJ"] == c["Triple"]
    # every triple: a FROM_CHUNK edge per chunk that stated it, carrying the sentence it came
    # from in that chunk; the node's own (first) provenance is one of those edges (issue 12: one
    # fact, one node, so a fact may come from several documents)
    rows = store.query(
        "MATCH (t:Triple)-[f:FROM_CHUNK]->(c:Chunk) RETURN t.id AS id, t.chunk_id AS cid, c.id AS linked, "
        "f.sentence AS sentence, c.text AS text, t.doc_id AS doc, c.doc_id AS cdoc"
    )
    assert {r["id"] for r in rows} == {r["id"] for r in store.query("MATCH (t:Triple) RETURN t.id AS id")}
    for r in rows:
        assert r["sentence"] and r["sentence"] in r["text"]
    for tid in {r["id"] for r in rows}:
        mine = [r for r in rows if r["id"] == tid]
        assert (mine[0]["cid"], mine[0]["doc"]) in {(r["linked"], r["cdoc"]) for r in mine}
    # hypernodes: "(Kell Arden; said; (Orrin Bridge; was; unsafe))" and a year qualifier
    said = store.query(
        "MATCH (t:Triple)-[:OBJ]->(inner:Triple), (t)-[:SUBJ]->(e:Entity) WHERE t.relation = $r "
        "RETURN e.name AS who, inner.text AS what",
        {"r": "said"},
    )
    assert said == [{"who": "Kell Arden", "what": "Orrin Bridge was unsafe"}]
    years = store.query("MATCH (t:Triple)-[:SUBJ]->(:Triple) WHERE t.relation = $r RETURN t.text AS text", {"r": "in year"})
    assert any(r["text"] == "Mira Tesk founded Tesk Works in year 1921" for r in years)
    # surname aliases resolved inside each document, entity shared across documents
    tesk = store.query("MATCH (e:Entity) WHERE e.id = $id RETURN e.name AS name, e.aliases AS aliases, e.n_mentions AS n", {"id": "ent:mira tesk"})
    assert tesk[0]["name"] == "Mira Tesk" and "Tesk" in tesk[0]["aliases"].split("|")
    docs = store.query("MATCH (d:Document)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e:Entity) WHERE e.id = $id RETURN DISTINCT d.title AS t", {"id": "ent:mira tesk"})
    assert {r["t"] for r in docs} == {"Orrin Bridge", "Mira Tesk"}
    assert tesk[0]["n"] == store.query("MATCH (:Chunk)-[m:MENTIONS]->(e:Entity) WHERE e.id = $id RETURN count(m) AS n", {"id": "ent:mira tesk"})[0]["n"]
    ext = store.query("MATCH (x:Extraction) RETURN DISTINCT x.mode AS mode, x.prompt_name AS p, x.status AS s")
    assert ext == [{"mode": "offline", "p": HEURISTIC_NAME, "s": "ok"}]
    assert any(m[0] == "Mira Tesk" and "Tesk" in m[1] for m in report.merges)
    # progress: stages in order, extract counts up to the number of chunks
    stages = [e.stage for e in events]
    assert [s for s in STAGES if s in stages] == sorted(set(stages), key=stages.index)
    extract = [e.done for e in events if e.stage == "extract"]
    assert extract == sorted(extract) and extract[-1] == c["Chunk"]
    d = report.to_dict()
    assert d["mode"] == "offline" and d["seconds_total"] > 0 and set(d["seconds_by_stage"]) == set(STAGES)


def test_rerun_adds_nothing_and_calls_nothing(open_store) -> None:
    store = open_store()
    llm = ScriptedLLM()
    first = build(corpus(), store, Reasoner(llm, EMB), SMALL)
    calls = llm.calls
    assert calls == first.counts["Chunk"]
    # LLM triples carry no sentence: provenance is the chunk sentence sharing most words
    rows = store.query("MATCH (t:Triple)-[:FROM_CHUNK]->(c:Chunk) RETURN t.sentence AS s, c.text AS text, t.text AS t")
    assert rows and all(r["s"] and r["s"] in r["text"] for r in rows)
    born = next(r for r in rows if r["t"] == "Mira Tesk was born in Aldport")
    assert born["s"] == "Mira Tesk was born in Aldport in 1890."
    second = build(corpus(), store, Reasoner(llm, EMB), SMALL)
    assert llm.calls == calls and second.new_documents == 0 and second.skipped_documents == 4
    assert second.counts == first.counts


def test_incremental_build_equals_clean_build(open_store) -> None:
    a, b = open_store("a"), open_store("b")
    build(corpus(["Mira Tesk", "Orrin Bridge"]), a, offline(), SMALL)
    inc = build(corpus(), a, offline(), SMALL)
    clean = build(corpus(), b, offline(), SMALL)
    assert inc.new_documents == 2 and inc.counts == clean.counts
    desc = a.query("MATCH (e:Entity) WHERE e.id = $id RETURN e.description AS d", {"id": "ent:aldport"})[0]["d"]
    assert "Aldport is the capital of Veyn." in desc or "Mira Tesk was born in Aldport in 1890." in desc


def test_similar_doc_is_top_k_by_cosine(open_store) -> None:
    store = open_store()
    build(corpus(), store, offline(), SMALL)
    ids = [r["id"] for r in store.query("MATCH (d:Document) RETURN d.id AS id ORDER BY id")]
    embs = store.get_embeddings("Document", ids)
    m = np.stack([embs[i] for i in ids])
    sims = m @ m.T / np.outer(np.linalg.norm(m, axis=1), np.linalg.norm(m, axis=1))
    edges = store.query("MATCH (a:Document)-[r:SIMILAR_DOC]->(b:Document) RETURN a.id AS a, b.id AS b, r.weight AS w")
    by_src: dict[str, list[tuple[str, float]]] = {}
    for e in edges:
        by_src.setdefault(e["a"], []).append((e["b"], e["w"]))
    for i, src in enumerate(ids):
        order = [ids[j] for j in np.argsort(-sims[i], kind="stable") if j != i and sims[i, j] > 0][:2]
        got = by_src.get(src, [])
        assert [b for b, _ in sorted(got, key=lambda x: -x[1])] == order
        for b, w in got:
            assert w == pytest.approx(sims[i, ids.index(b)], abs=1e-5)
    # K changes -> the layer is rebuilt with the new K
    report = build(corpus(), store, offline(), BuildParams(chunk_tokens=24, chunk_overlap=0, similar_docs_k=1))
    assert report.counts["SIMILAR_DOC"] <= 4


def test_cancel_mid_build_then_resume_without_duplicates(open_store) -> None:
    store, clean_store = open_store("a"), open_store("clean")
    cancel = threading.Event()
    params = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=1, batch_size=1, similar_docs_k=2, flush_interval_s=0,
                         ket_descriptions=False)  # extraction calls are counted (see SMALL)

    def progress(ev: ProgressEvent) -> None:
        if ev.stage == "extract" and ev.done >= 3:
            cancel.set()

    llm = ScriptedLLM()
    with pytest.raises(BuildCancelled):
        build(corpus(), store, Reasoner(llm, EMB), params, progress=progress, cancel=cancel)
    done = store.counts()
    assert 3 <= done["Extraction"] < llm.calls + 2 and done["Document"] == done["Triple"] == 0
    llm2 = ScriptedLLM()
    resumed = build(corpus(), store, Reasoner(llm2, EMB), params)
    clean = build(corpus(), clean_store, Reasoner(ScriptedLLM(), EMB), params)
    assert resumed.counts == clean.counts
    assert llm2.calls == clean.counts["Chunk"] - done["Extraction"] and resumed.reused_extractions == done["Extraction"]


def test_llm_path_counts_malformed_lines_and_records_failures(open_store) -> None:
    store = open_store()

    def script(text: str) -> str:
        if "capital of Veyn" in text:
            return "I could not find any facts, sorry."  # no triple at all -> failed
        if "journalist" in text:
            return offline_reply(text) + "\n(broken; line)\n(also broken"
        return failing_for("University of Aldport")(text)

    report = build(corpus(), store, Reasoner(ScriptedLLM(script), EMB), SMALL)
    assert report.mode == "fake:scripted-1" and report.n_malformed_lines == 2
    reasons = " | ".join(f[1] for f in report.failures)
    assert "overloaded" in reasons and "no triple" in reasons
    statuses = {r["s"]: r["n"] for r in store.query("MATCH (x:Extraction) RETURN x.status AS s, count(*) AS n")}
    assert statuses["partial"] == 1 and statuses["failed"] == len(report.failures) == 2
    raw = store.query("MATCH (x:Extraction) WHERE x.status = $s RETURN x.raw AS raw, x.error AS err", {"s": "partial"})[0]
    assert "(broken; line)" in raw["raw"] and "could not read" in raw["err"]
    assert report.usage.input_tokens > 0 and report.counts["Document"] == 4
    # re-run with a healthy model: only the failed chunks go back to it, result equals a clean build
    llm = ScriptedLLM()
    again = build(corpus(), store, Reasoner(llm, EMB), SMALL)
    assert llm.calls == 2 and again.retried_documents == 2 and not again.failures
    clean = build(corpus(), open_store("clean"), Reasoner(ScriptedLLM(), EMB), SMALL)
    assert again.counts == clean.counts


def test_empty_reply_is_a_failed_chunk_not_an_empty_one(open_store) -> None:
    store = open_store()
    script = lambda text: "" if "capital of Veyn" in text else offline_reply(text)  # noqa: E731
    report = build(corpus(), store, Reasoner(ScriptedLLM(script), EMB), SMALL)
    assert [f[1] for f in report.failures] == ["the reply was empty — the chunk is retried on the next build"]
    llm = ScriptedLLM()
    again = build(corpus(), store, Reasoner(llm, EMB), SMALL)
    assert llm.calls == 1 and not again.failures


def test_legacy_ok_rows_with_an_empty_reply_are_asked_again(open_store) -> None:
    store = open_store()
    build(corpus(), store, Reasoner(ScriptedLLM(), EMB), SMALL)
    want = dict(store.counts())
    # what kgviz before issue 15 left behind: an empty reply stored as "ok, 0 triples"
    chunk_id = store.query("MATCH (x:Extraction) RETURN x.chunk_id AS c ORDER BY c LIMIT 1")[0]["c"]
    store.execute("MATCH (x:Extraction) WHERE x.chunk_id = $c SET x.raw = '', x.n_triples = 0, x.status = 'ok'",
                  {"c": chunk_id})
    llm = ScriptedLLM()
    again = build(corpus(), store, Reasoner(llm, EMB), SMALL)
    assert llm.calls == 1 and again.retried_documents == 1 and not again.failures
    assert dict(again.counts) == want


def test_auth_error_stops_the_build_but_keeps_finished_chunks(open_store) -> None:
    store = open_store()

    def script(text: str) -> str:
        if "Aldport is the capital" in text:
            raise AuthenticationError("401 invalid x-api-key")
        return offline_reply(text)

    params = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=1, batch_size=1, flush_interval_s=0)
    with pytest.raises(AuthenticationError):
        build(corpus(), store, Reasoner(ScriptedLLM(script), EMB), params)
    assert store.counts()["Extraction"] >= 1 and store.counts()["Document"] == 0


def test_half_written_documents_are_purged_and_rebuilt(open_store) -> None:
    store, clean_store = open_store("a"), open_store("clean")
    build(corpus(["Aldport"]), store, offline(), SMALL)
    # simulate a process killed in the middle of writing "Mira Tesk"
    doc = corpus(["Mira Tesk"])[0]
    gw.set_pending(store, [doc.id])
    store.bulk_load_nodes("Document", [{"id": doc.id, "title": doc.title, "text": doc.text}])
    store.bulk_load_nodes("Chunk", [{"id": f"{doc.id}#c0", "doc_id": doc.id, "ord": 0, "text": "partial"}])
    store.bulk_load_rels("HAS_CHUNK", [{"from": doc.id, "to": f"{doc.id}#c0"}], from_table="Document", to_table="Chunk")
    report = build(corpus(), store, offline(), SMALL)
    assert report.resumed_documents == 1 and gw.pending_documents(store) == []
    assert report.counts == build(corpus(), clean_store, offline(), SMALL).counts


def test_embedder_mismatch_is_refused(open_store) -> None:
    store = open_store()
    with pytest.raises(EmbedderMismatchError):
        build(corpus(), store, Reasoner(OfflineLLM(), HashingEmbedder(32)), SMALL)


def test_sample_data_builds_a_usable_graph(open_store) -> None:
    from kgviz.ingest import load_paths

    sample = Path(__file__).resolve().parents[2] / "sample_data" / "corpus"
    if not sample.exists():
        pytest.skip("sample_data absent")
    store = open_store()
    report = build(load_paths([sample]).documents, store, offline())
    n_docs = report.counts["Document"]
    assert n_docs >= 10 and report.counts["Triple"] > 100 and report.counts["RELATED"] > 80
    found = store.query(
        "MATCH (a:Entity)-[r:RELATED]->(b:Entity) WHERE b.id = $b AND r.relation = $rel RETURN a.name AS who",
        {"b": "ent:orrin bridge", "rel": "designed"},
    )
    assert [r["who"] for r in found] == ["Edda Lunn"]
    assert report.counts["SIMILAR_DOC"] == 3 * n_docs  # K=3 out-edges per document


def _graph_rows(store: GraphStore) -> dict[str, list]:
    """What a build stored, order-free: every Triple, Entity, Extraction row and MENTIONS edge."""
    return {
        "triples": sorted(tuple(r.values()) for r in store.query(
            "MATCH (t:Triple) RETURN t.id, t.text, t.chunk_id, t.sentence, t.kind")),
        "entities": sorted(tuple(r.values()) for r in store.query(
            "MATCH (e:Entity) RETURN e.id, e.name, e.description, e.aliases, e.n_mentions")),
        "extractions": sorted(tuple(r.values()) for r in store.query(
            "MATCH (x:Extraction) RETURN x.chunk_id, x.mode, x.raw, x.status, x.n_triples, x.error")),
        "mentions": sorted(tuple(r.values()) for r in store.query(
            "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) RETURN c.id, e.id")),
    }


def test_offline_extraction_in_worker_processes_builds_the_same_graph(open_store, monkeypatch) -> None:
    """From OFFLINE_PROCESS_MIN_CHUNKS chunks on, an offline build extracts in worker processes
    (issue 29: the pattern extractor holds the GIL, so threads used one core): the same graph,
    Extraction rows, report figures and progress up to every chunk as the thread pool gives."""
    from kgviz.index import extract

    threads = build(corpus(), open_store("threads"), offline(), SMALL)
    monkeypatch.setattr(extract, "OFFLINE_PROCESS_MIN_CHUNKS", 3)
    monkeypatch.setattr(extract, "OFFLINE_BATCH", 2)
    calls: list[int] = []
    real = extract._run_offline_processes
    monkeypatch.setattr(extract, "_run_offline_processes", lambda *a: calls.append(1) or real(*a))
    events: list[ProgressEvent] = []
    procs_store = open_store("processes")
    procs = build(corpus(), procs_store, offline(), SMALL, progress=events.append)
    assert calls == [1] and extract.offline_processes(SMALL, 3) == 2
    assert _graph_rows(procs_store) == _graph_rows(open_store("threads"))
    assert procs.counts == threads.counts
    for field in ("extracted_chunks", "failed_chunks", "facts_accepted", "facts_ungrounded", "warnings"):
        assert getattr(procs, field) == getattr(threads, field), field
    assert sorted(procs.chunk_facts, key=str) == sorted(threads.chunk_facts, key=str)
    done = [e.done for e in events if e.stage == "extract"]
    assert done == sorted(done) and done[-1] == procs.counts["Chunk"]


def test_a_cancel_stops_the_worker_processes_and_keeps_what_finished(open_store, monkeypatch) -> None:
    from kgviz.index import extract
    from kgviz.ingest import chunk_document

    monkeypatch.setattr(extract, "OFFLINE_PROCESS_MIN_CHUNKS", 3)
    monkeypatch.setattr(extract, "OFFLINE_BATCH", 1)
    cancel = threading.Event()

    def on_progress(e: ProgressEvent) -> None:
        if e.stage == "extract" and e.done >= 2:
            cancel.set()

    store = open_store()
    with pytest.raises(BuildCancelled, match="chunks were extracted"):
        build(corpus(), store, offline(), SMALL, progress=on_progress, cancel=cancel)
    kept = len(store.query("MATCH (x:Extraction) RETURN x.chunk_id"))
    n_chunks = sum(len(chunk_document(d, chunk_tokens=SMALL.chunk_tokens, overlap=SMALL.chunk_overlap))
                   for d in corpus())
    assert 2 <= kept < n_chunks  # the batches in flight finished and were written; none was submitted after
    again = build(corpus(), store, offline(), SMALL)
    assert again.reused_extractions == kept and again.counts == build(corpus(), open_store("clean"), offline(), SMALL).counts


def _vectors(store: GraphStore, folder: Path) -> dict[str, object]:
    """Every stored vector by id, and the exact search's vector files byte for byte."""
    out: dict[str, object] = {t: sorted((r["id"], np.asarray(r["emb"], np.float32).tobytes()) for r in store.query(
        f"MATCH (n:{t}) RETURN n.id AS id, n.emb AS emb")) for t in ("Document", "Chunk", "Entity", "Triple")}
    out["keywords"] = sorted((r["id"], np.asarray(r["emb"], np.float32).tobytes()) for r in store.query(
        "MATCH (k:Keyword) RETURN k.id AS id, k.emb AS emb"))
    out["subchunks"] = sorted((r["id"], np.asarray(r["emb"], np.float32).tobytes()) for r in store.query(
        "MATCH (s:SubChunk) RETURN s.id AS id, s.emb AS emb"))
    out["files"] = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    return out


def test_a_build_with_every_pool_forced_on_equals_the_one_process_build(open_store, tmp_path, monkeypatch) -> None:
    """workers = 1 keeps the build in one process; with the worker processes forced on for the
    extraction and every hashing embedding (knn, embed and ket stages), the graph, its vectors
    and the vector files are the same bit for bit (issue 29)."""
    from dataclasses import replace

    from kgviz.graph import vector_file
    from kgviz.index import embed, extract, processes

    started: list[int] = []
    real_init = processes.ProcessPool.__init__
    monkeypatch.setattr(processes.ProcessPool, "__init__", lambda self, n: started.append(n) or real_init(self, n))
    one = build(corpus(), open_store("one"), offline(), replace(SMALL, workers=1))
    assert started == []
    monkeypatch.setattr(extract, "OFFLINE_PROCESS_MIN_CHUNKS", 3)
    monkeypatch.setattr(embed, "EMBED_PROCESS_MIN_TEXTS", 3)
    monkeypatch.setattr(embed, "EMBED_BLOCK_BATCHES", 2)
    pooled = build(corpus(), open_store("pooled"), offline(), replace(SMALL, workers=2, embed_batch_size=5))
    assert started == [2] * 4  # knn, extract, embed, ket (sub-chunks and sentences share one)
    assert _graph_rows(open_store("pooled")) == _graph_rows(open_store("one"))
    assert pooled.counts == one.counts and pooled.ket["keywords"] == one.ket["keywords"]
    assert _vectors(open_store("pooled"), tmp_path / "pooled" / vector_file.VECTOR_DIR) == \
        _vectors(open_store("one"), tmp_path / "one" / vector_file.VECTOR_DIR)


def test_an_extraction_worker_error_stops_the_build_with_it_and_a_rerun_resumes(open_store, monkeypatch) -> None:
    from tests.support import worker_tasks
    from kgviz.index import extract

    monkeypatch.setattr(extract, "OFFLINE_PROCESS_MIN_CHUNKS", 3)
    monkeypatch.setattr(extract, "OFFLINE_BATCH", 1)
    monkeypatch.setattr(extract, "extract_offline_batch", worker_tasks.failing_extract_batch)
    store = open_store()
    with pytest.raises(ValueError, match="the extractor broke on") as info:
        build(corpus(), store, offline(), SMALL)
    assert any("in a build worker process" in note for note in info.value.__notes__)
    kept = len(store.query("MATCH (x:Extraction) RETURN x.chunk_id"))
    assert kept >= 1  # the batches before the failing one were written
    monkeypatch.undo()
    again = build(corpus(), store, offline(), SMALL)
    assert again.reused_extractions == kept
    clean = open_store("clean")
    build(corpus(), clean, offline(), SMALL)
    assert _graph_rows(store) == _graph_rows(clean)


def test_a_first_build_writes_the_vector_files_from_its_own_vectors(open_store, tmp_path, monkeypatch) -> None:
    """The index stage writes the exact search's vector files from the vectors the build just
    loaded, not by reading every vector back out of Kùzu (issue 29), and they are the files the
    read from Kùzu writes, byte for byte. The Entity and Triple vectors are kept in those files
    only (kgviz.graph.vector_home: Kùzu holds none of them); an incremental build merges its new
    rows into them, and the files are again those of a workspace that kept its vectors in Kùzu
    and read them back."""
    from kgviz.graph import search, vector_file, vector_home
    from kgviz.index import pipeline

    store = open_store()
    reads: list[str] = []
    real = store.query_arrow
    monkeypatch.setattr(store, "query_arrow", lambda cypher, params=None: reads.append(cypher) or real(cypher, params))
    build(corpus(["Mira Tesk", "Orrin Bridge"]), store, offline(), SMALL)
    whole_reads = [c for c in reads if c.startswith("MATCH (n:") and c.endswith("n.emb")]
    assert not any(t in c for c in whole_reads for t in ("(n:Chunk)", "(n:Entity)", "(n:Triple)")), whole_reads
    # nor does it ask which rows have a vector ("emb IS NOT NULL" reads the whole vector column
    # through Kùzu's buffer pool): the build loaded every row with its vector
    not_null = [c for c in reads if "IS NOT NULL" in c]
    assert not any(t in c for c in not_null for t in ("(n:Chunk)", "(n:Entity)", "(n:Triple)")), not_null
    for table in vector_home.TABLES:
        assert vector_home.files_digest(vector_home.state(store, table)) == vector_file.stored_digest(store.path, table)
        assert store.query(f"MATCH (n:{table}) WHERE n.emb IS NOT NULL RETURN count(n) AS c")[0]["c"] == 0
    folder = tmp_path / "ws" / vector_file.VECTOR_DIR

    def files(folder: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}

    written = files(folder)
    for table in ("Chunk", "Entity", "Triple"):
        assert f"{table}.emb.npy" in written and f"{table}.stored.npy" in written

    # the same builds into a workspace that keeps every vector in Kùzu, its files read back from it
    with monkeypatch.context() as m:
        m.setattr(pipeline, "_vectors_in_files", lambda store, new, spill: set())
        twin = open_store("twin")
        build(corpus(["Mira Tesk", "Orrin Bridge"]), twin, offline(), SMALL)
        twin_folder = Path(twin.path) / vector_file.VECTOR_DIR
        for p in twin_folder.iterdir():
            if p.is_file():
                p.unlink()
        twin.execute("MATCH (m:Meta) WHERE m.key = $k DELETE m", {"k": "nothing"})  # a write: the cached matrices go
        for table in ("Document", "Chunk", "Entity", "Triple"):
            search.prepare_exact_search(twin, table)  # from Kùzu
        assert files(twin_folder) == written
        build(corpus(), twin, offline(), SMALL)
    reads.clear()
    build(corpus(), store, offline(), SMALL)
    # old rows' vectors come from the files, never out of Kùzu
    assert not any(c.endswith("n.emb") and t in c for c in reads for t in ("(n:Entity)", "(n:Triple)")), reads
    assert files(folder) == files(twin_folder)
    for table in vector_home.TABLES:
        assert vector_home.files_digest(vector_home.state(store, table)) == vector_file.stored_digest(store.path, table)
    assert not list(folder.glob("*" + vector_file.PREVIOUS))


def _similar_docs(store: GraphStore) -> list[tuple]:
    return sorted(tuple(r.values()) for r in store.query(
        "MATCH (a:Document)-[s:SIMILAR_DOC]->(b:Document) RETURN a.id, b.id, s.weight"))


def test_a_first_build_makes_the_document_layer_from_its_own_vectors(open_store, monkeypatch) -> None:
    """The doc_layer stage of a first build takes the Document vectors from the build's spill,
    not read back out of Kùzu (issue 29), and makes the layer a read of the stored vectors makes;
    an incremental build reads the stored vectors (the vector files, which hold its new rows from
    its write stage on: kgviz.graph.vector_home) and gives the layer a whole build gives."""
    from kgviz.index import doc_layer, pipeline

    reads: list[str] = []
    recording = [False]
    real_layer = pipeline.build_doc_layer

    def layer(*args, **kwargs):  # records the statements of the doc_layer stage only
        recording[0] = True
        try:
            return real_layer(*args, **kwargs)
        finally:
            recording[0] = False

    monkeypatch.setattr(pipeline, "build_doc_layer", layer)
    store = open_store()
    for name in ("query", "query_arrow"):
        real = getattr(store, name)
        monkeypatch.setattr(store, name, lambda cypher, params=None, real=real:
                            (reads.append(cypher) if recording[0] else None) or real(cypher, params))
    build(corpus(["Mira Tesk", "Orrin Bridge", "Kell Arden"]), store, offline(), SMALL)
    first = _similar_docs(store)
    assert first and reads and not [c for c in reads if "emb" in c], reads
    # the same layer from the stored vectors
    assert doc_layer.build_doc_layer(store, SMALL.similar_docs_k, force=True) == len(first)
    assert _similar_docs(store) == first

    reads.clear()
    build(corpus(), store, offline(), SMALL)  # one more document: the old ones' vectors are not in the spill
    assert reads and not [c for c in reads if "emb" in c], reads  # nor in Kùzu: in the files
    whole = open_store("whole")
    build(corpus(), whole, offline(), SMALL)
    assert _similar_docs(store) == _similar_docs(whole) and len(_similar_docs(whole)) > len(first)


def test_a_first_build_looks_up_no_entity_or_fact_ids_and_later_builds_still_count_mentions(
        open_store, monkeypatch) -> None:
    """Into empty Entity and Triple tables (a first build) the resolve stage looks up none of its
    ids and the write stage recounts no mentions (issue 29: ~2M ids sent to Kùzu at 100k passages
    to find nothing; the rows' counts are their MENTIONS edges already). A later build adding
    documents that mention stored entities still recounts them: the same graph as one build."""
    from kgviz.graph import writes

    looked_up: list[str] = []
    real_existing, real_details, real_refresh = GraphStore.existing_ids, writes.entity_details, writes.refresh_mention_counts
    monkeypatch.setattr(GraphStore, "existing_ids",
                        lambda self, table, ids: looked_up.append(table) or real_existing(self, table, ids))
    monkeypatch.setattr(writes, "entity_details", lambda store, ids: looked_up.append("details") or real_details(store, ids))
    monkeypatch.setattr(writes, "refresh_mention_counts",
                        lambda store, ids: looked_up.append("recount") or real_refresh(store, ids))
    names = [d.title for d in corpus()]
    first, rest = names[:2], names[2:]
    whole = open_store("whole")
    build(corpus(), whole, offline(), SMALL)
    assert not {"Triple", "Entity", "details", "recount"} & set(looked_up)
    looked_up.clear()
    two = open_store("two")
    build(corpus(first), two, offline(), SMALL)
    build(corpus(rest), two, offline(), SMALL)
    assert {"Triple", "details", "recount"} <= set(looked_up)  # the second build's

    def mention_counts(store: GraphStore) -> tuple[dict[str, int], dict[str, int]]:
        stored = {r["id"]: r["n"] for r in store.query("MATCH (e:Entity) RETURN e.id AS id, e.n_mentions AS n")}
        edges = {r["id"]: r["n"] for r in store.query(
            "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) RETURN e.id AS id, count(c) AS n")}
        return stored, edges

    stored, edges = mention_counts(whole)
    assert stored == edges and stored == mention_counts(two)[0] == mention_counts(two)[1]
    assert any(n > 1 for n in stored.values())
