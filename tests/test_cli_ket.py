"""`kgviz build` KET-RAG options on the sample corpus (offline, temp databases): the default build
serves every method, --beta extracts a PageRank skeleton and reports its cost against a full KG,
--no-ket leaves the KET-RAG variants a clear error, and --estimate accounts for β."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kgviz.cli import main
from kgviz.graph.store import GraphStore

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "corpus"
QUESTION = "Who designed the bridge that Mira Tesk said was unsafe?"


def build_json(capsys: pytest.CaptureFixture[str], db: Path, *flags: str) -> dict:
    assert main(["build", str(SAMPLE), "--db", str(db), "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


def ask_json(capsys: pytest.CaptureFixture[str], db: Path, method: str, status: int = 0) -> list[dict]:
    assert main(["ask", QUESTION, "--db", str(db), "--method", method, "--json"]) == status
    return json.loads(capsys.readouterr().out)


def test_default_build_serves_every_method(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kgviz.methods.registry import list_methods

    db = env / "db"
    report = build_json(capsys, db)
    counts, ket = report["counts"], report["ket"]
    assert counts["Keyword"] > 0 and counts["SubChunk"] > 0 and counts["KNN"] > 0
    # β = 1 by default: every chunk is extracted, so the KG is complete
    assert ket["beta"] == 1.0 and ket["skeleton_beta"] == 1.0
    assert report["extracted_chunks"] == counts["Chunk"] == counts["Extraction"] == ket["n_core"]
    runs = ask_json(capsys, db, "all")
    assert {r["method"] for r in runs} == set(list_methods())
    assert [(r["method"], r["error"]) for r in runs if r["error"]] == []
    for r in runs:
        assert r["trace"], r["method"]
    # ket-rag's default simulates the paper's β = 0.8 PageRank skeleton on the full KG
    seed_step = next(r for r in runs if r["method"] == "ket-rag")["trace"][0]
    n_sim = math.ceil(0.8 * counts["Chunk"])
    assert f"simulated β=0.8 skeleton (pagerank: {n_sim} of {counts['Chunk']} chunks" in seed_step["data"]["skeleton"]
    assert seed_step["data"]["graph_beta"] == 1.0 and not seed_step["data"]["warning"]


def test_beta_half_extracts_half_the_chunks_and_reports_the_cost(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = env / "db"
    report = build_json(capsys, db, "--beta", "0.5", "--knn-k", "4", "--tau", "0")
    n = report["counts"]["Chunk"]
    with GraphStore.open(db) as store:
        extracted = {r["c"] for r in store.query("MATCH (x:Extraction) RETURN x.chunk_id AS c")}
        core = {r["c"] for r in store.query("MATCH (c:Chunk) WHERE c.core RETURN c.id AS c")}
        from_chunks = {r["c"] for r in store.query("MATCH (:Triple)-[:FROM_CHUNK]->(c:Chunk) RETURN DISTINCT c.id AS c")}
    assert len(extracted) == math.ceil(0.5 * n) == report["extracted_chunks"] < n
    assert extracted == core and from_chunks <= core
    ket = report["ket"]
    assert ket["beta"] == 0.5 and ket["k"] == 4 and ket["tau"] == 0
    assert report["counts"]["KNN"] == 4 * n and report["counts"]["SubChunk"] == n  # τ = 0: one sub-chunk per chunk
    cost = ket["cost"]
    assert cost["n_chunks"] == n and cost["n_core"] == len(core)
    assert 0 < cost["skeleton_estimate_tokens"] < cost["full_estimate_tokens"]
    assert 0.35 < cost["estimated_saving"] < 0.65
    assert cost["skeleton_actual_tokens"] == 0  # offline: nothing was sent to a provider
    # the default ket-rag uses the built skeleton, with no second restriction and no warning
    run = ask_json(capsys, db, "ket-rag")[0]
    assert not run["error"]
    data = run["trace"][0]["data"]
    assert data["skeleton"].startswith("skeleton as built") and not data["warning"]
    assert data["graph_beta"] == pytest.approx(len(core) / n)


def test_text_output_shows_skeleton_against_full(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(SAMPLE), "--db", str(env / "db"), "--beta", "0.8", "--core-selection", "random"]) == 0
    out = capsys.readouterr().out
    assert "KET-RAG index: β=0.8 (random)" in out and "skeleton" in out and "full KG" in out
    assert "KNN graph, PageRank and core chunks: computed (no plan was kept); keyword view: stored" in out
    # the same build again: the plan its knn stage kept is reused, the view stored is up to date
    assert main(["build", str(SAMPLE), "--db", str(env / "db"), "--beta", "0.8", "--core-selection", "random"]) == 0
    assert "KNN graph, PageRank and core chunks: reused; keyword view: up to date" in capsys.readouterr().out


def test_no_ket_then_ket_rag_is_a_clear_error(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = env / "db"
    report = build_json(capsys, db, "--no-ket")
    assert report["ket"] == {} and report["counts"]["Keyword"] == report["counts"]["KNN"] == 0
    assert report["extracted_chunks"] == report["counts"]["Chunk"]
    # some methods failed: exit status 3
    runs = {r["method"]: r for r in ask_json(capsys, db, "ket-rag,keyword-rag,kg-rag,ket-full", status=3)}
    for name in ("ket-rag", "keyword-rag"):
        assert "no KET keyword index" in runs[name]["error"] and "rebuild with KET enabled" in runs[name]["error"]
    assert not runs["kg-rag"]["error"] and not runs["ket-full"]["error"]


def test_no_ket_with_ket_options_and_bad_beta_exit_2(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(SAMPLE), "--db", str(env / "db"), "--no-ket", "--beta", "0.5"]) == 2
    assert "--no-ket cannot be combined with --beta" in capsys.readouterr().err
    assert main(["build", str(SAMPLE), "--db", str(env / "db"), "--beta", "0", "--estimate"]) == 2
    assert "core_fraction" in capsys.readouterr().err
    assert main(["build", str(SAMPLE), "--db", str(env / "db"), "--knn-k", "3", "--estimate"]) == 2
    assert "knn_k" in capsys.readouterr().err


def test_estimate_accounts_for_beta(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = env / "db"
    assert main(["build", str(SAMPLE), "--db", str(db), "--estimate", "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert full["beta"] == 1.0 and full["full"] is None and full["chunks"] == full["total_chunks"] > 0
    assert main(["build", str(SAMPLE), "--db", str(db), "--estimate", "--json", "--beta", "0.5"]) == 0
    half = json.loads(capsys.readouterr().out)
    n = full["chunks"]
    assert half["beta"] == 0.5 and half["chunks"] == math.ceil(0.5 * n) and half["total_chunks"] == n
    assert half["full"]["chunks"] == n and half["usd"] == half["calls"] == 0 and half["offline"]  # no LLM offline
    assert main(["build", str(SAMPLE), "--db", str(db), "--estimate", "--beta", "0.5"]) == 0
    text = capsys.readouterr().out
    assert f"chunks extracted: {math.ceil(0.5 * n)} of {n} (β=0.5)" in text and "a full KG (β=1)" in text
    assert main(["build", str(SAMPLE), "--db", str(db), "--estimate", "--json", "--no-ket", "--beta", "0.5"]) == 2
    if db.exists():  # --estimate writes no chunk
        with GraphStore.open(db) as store:
            assert store.counts().get("Chunk", 0) == 0


def test_estimate_priced_skeleton_is_beta_of_the_full_kg() -> None:
    from kgviz.index.params import BuildParams
    from kgviz.index.pipeline import estimate_cost
    from kgviz.ingest import load_paths

    docs = load_paths([SAMPLE]).documents
    spec = "anthropic:claude-haiku-4-5"
    # the extraction's figures (the skeleton's description calls: tests/index/test_estimate_describe.py)
    full = estimate_cost(docs, BuildParams(ket_descriptions=False), spec)
    skel = estimate_cost(docs, BuildParams(core_fraction=0.8, ket_descriptions=False), spec)
    off = estimate_cost(docs, BuildParams(core_fraction=0.8, ket_enabled=False), spec)
    assert full.full is None and off.full is None and off.chunks == full.chunks == off.total_chunks
    assert (off.input_tokens, off.output_tokens) == (full.input_tokens, full.output_tokens)
    k = math.ceil(0.8 * full.chunks)
    assert skel.chunks == skel.calls == k and skel.full is not None and skel.full.input_tokens == full.input_tokens
    assert skel.input_tokens == round(full.input_tokens * k / full.chunks)
    assert skel.output_tokens == round(full.output_tokens * k / full.chunks)
    assert 0 < skel.usd < full.usd and skel.full.usd == pytest.approx(full.usd)


def test_ket_paper_index_keeps_every_word_and_overrides_reach_the_index(env: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from kgviz.index.ket import ket_info

    build_json(capsys, env / "paper", "--ket-preset", "paper")
    build_json(capsys, env / "custom", "--keyword-max-df", "0.5", "--min-word-len", "2", "--no-adaptive-tau")
    for name, want in (("paper", (1.0, 1, False)), ("custom", (0.5, 2, False))):
        with GraphStore.open(env / name) as store:
            built = ket_info(store)["params"]
        assert (built["keyword_max_df"], built["min_word_len"], built["adaptive_tau"]) == want
    steps = ask_json(capsys, env / "paper", "ket-rag")[0]["trace"]
    seed = next(s for s in steps if s["title"] == "Keyword channel: seed keywords")
    assert "regex" in seed["ours"] and "keyword_max_df" not in seed["ours"]  # the index's own rules, read back
    assert main(["build", str(SAMPLE), "--db", str(env / "x"), "--no-ket", "--ket-preset", "paper"]) == 2
    assert "--no-ket cannot be combined with --ket-preset" in capsys.readouterr().err


def test_ket_descriptions_flag_reaches_the_build_and_conflicts_with_no_ket(env: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(SAMPLE), "--db", str(env / "x"), "--no-ket", "--ket-descriptions"]) == 2
    assert "--no-ket cannot be combined with --ket-descriptions" in capsys.readouterr().err
    # offline there is no model to describe anything: the flag changes nothing, and no Description is written
    report = build_json(capsys, env / "db", "--no-ket-descriptions")
    assert report["counts"]["Description"] == 0 and "descriptions" not in report["ket"]
