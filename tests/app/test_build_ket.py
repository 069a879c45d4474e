"""The Build page's KET-RAG parts with AppTest (offline, hashing embedder): the KET options, the
KNN degree chart, the PageRank core-chunk table and the skeleton-vs-full-KG cost, after a build
and for a graph that already exists."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from kgviz.graph.store import GraphStore

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
CORE_COLUMNS = ["rank", "chunk", "pagerank", "excerpt", "id"]


def new_app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=120)


def texts(at: AppTest, kind: str) -> list[str]:
    return [str(getattr(e, "value", "")) for e in getattr(at, kind)]


def button(at: AppTest, label: str):  # noqa: ANN201 - AppTest element type
    return next(b for b in at.button if b.label == label)


def frames(at: AppTest) -> list[pd.DataFrame]:
    return [df.value for df in at.dataframe]


def core_table(at: AppTest) -> pd.DataFrame:
    return next(f for f in frames(at) if list(f.columns) == CORE_COLUMNS)


def cost_tables(at: AppTest) -> list[pd.DataFrame]:
    return [f for f in frames(at) if "extraction" in f.columns]


def knn_chart_spec(at: AppTest) -> dict:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return next(s for s in specs if "KNN chunk graph" in json.dumps(s.get("layout", {}).get("title", "")))


def build_sample_on_page(at: AppTest, beta: float | None = None) -> None:
    at.switch_page("pages/build.py").run()
    assert not at.exception, at.exception
    at.radio[0].set_value("Sample corpus").run()
    if beta is not None:
        at.slider(key="kgviz_build_beta").set_value(beta).run()
    button(at, "Build").click().run()
    assert not at.exception, at.exception


def stored(db: Path) -> tuple[dict[str, float], set[str], int]:
    """(chunk -> PageRank, built core chunks, chunks with an Extraction row)."""
    store = GraphStore.open(db)  # same process: shares the app's Database
    pr = {r["id"]: float(r["pr"]) for r in store.query("MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS pr")}
    core = {r["id"] for r in store.query("MATCH (c:Chunk) WHERE c.core RETURN c.id AS id")}
    extracted = store.counts()["Extraction"]
    return pr, core, extracted


def test_default_build_shows_knn_chart_core_chunks_and_cost(app_env: Path) -> None:
    at = new_app().run()
    build_sample_on_page(at)
    assert "Graph overview" in texts(at, "subheader")
    spec = knn_chart_spec(at)
    assert spec["layout"]["xaxis"]["type"] == "log" and spec["layout"]["yaxis"]["type"] == "log"
    pr, core, extracted = stored(app_env)
    n = len(pr)
    xs, ys = spec["data"][0]["x"], spec["data"][0]["y"]
    assert sum(ys) <= n and all(x > 0 for x in xs)  # chunks with KNN edges, per degree
    # β = 1 by default: every chunk extracted, and the table lists ket-rag's simulated β = 0.8 core
    assert extracted == n == len(core)
    table = core_table(at)
    k = math.ceil(0.8 * n)
    assert len(table) == min(k, 20) and list(table["rank"]) == list(range(1, len(table) + 1))
    top = sorted(pr, key=lambda c: (-pr[c], c))[: len(table)]
    assert list(table["id"]) == top
    # named as a person would: "<document title> · part N", never the chunk's hash id
    assert all(" · part " in c and c.split(" · part ")[1].isdigit() and i not in c
               for c, i in zip(table["chunk"], table["id"]))
    assert list(table["pagerank"]) == sorted(table["pagerank"], reverse=True)
    assert all(0 < len(x) <= 160 for x in table["excerpt"])
    overview_cost = cost_tables(at)[-1]
    skel, full = overview_cost.to_dict("records")
    assert skel["chunks (LLM calls)"] == k and full["chunks (LLM calls)"] == n
    assert 0 < skel["input tokens (est.)"] < full["input tokens (est.)"]
    assert skel["$ (est.)"] == full["$ (est.)"] == "$0 (offline)"
    assert any("Offline extraction sends nothing and costs $0" in t for t in texts(at, "caption"))


def test_beta_slider_builds_a_skeleton_and_shows_its_cost(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    at.radio[0].set_value("Sample corpus").run()
    at.slider(key="kgviz_build_beta").set_value(0.5).run()
    assert any("KET-RAG skeleton, β=0.5" in t and "A full KG (β=1)" in t for t in texts(at, "caption"))
    button(at, "Build").click().run()
    assert not at.exception, at.exception
    pr, core, extracted = stored(app_env)
    n = len(pr)
    assert len(core) == extracted == math.ceil(0.5 * n)
    assert set(core_table(at)["id"]) == core  # the built core, not a simulation
    build_cost, overview_cost = cost_tables(at)
    for frame in (build_cost, overview_cost):
        skel, full = frame.to_dict("records")
        assert (skel["chunks (LLM calls)"], full["chunks (LLM calls)"]) == (len(core), n)
        assert skel["output tokens (est.)"] < full["output tokens (est.)"]
    assert any("the KG covers 53% of the chunks" in t for t in texts(at, "caption"))
    # (markdown-escaped: "computed \\(no plan was kept\\)")
    assert any("KNN graph, PageRank and core chunks: computed" in t and "no plan was kept" in t
               and "KET-RAG's keyword view: stored" in t for t in texts(at, "caption"))


def test_existing_graph_overview(app_env: Path, capsys) -> None:  # noqa: ANN001 - pytest fixture
    from kgviz.cli import main

    # a β = 0.8 skeleton built by the CLI before the app starts: the page shows it without a build
    assert main(["build", str(ROOT / "sample_data" / "corpus"), "--db", str(app_env), "--beta", "0.8", "--json"]) == 0
    n_chunks = json.loads(capsys.readouterr().out)["counts"]["Chunk"]
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    assert not at.exception, at.exception
    assert "Build report" not in texts(at, "subheader") and "Graph overview" in texts(at, "subheader")
    assert knn_chart_spec(at)
    table = core_table(at)
    assert len(table) == math.ceil(0.8 * n_chunks)
    assert any("this graph's KG was extracted from" in t for t in texts(at, "markdown"))
    skel, full = cost_tables(at)[0].to_dict("records")
    assert skel["extraction"].startswith("β=0.8 skeleton (as built)") and full["chunks (LLM calls)"] == n_chunks


def test_no_ket_build_says_the_ket_methods_cannot_run(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    at.file_uploader[0].set_value(("note.md", b"# Note\n\nAda Lovelace worked with Charles Babbage in London.\n",
                                   "text/markdown")).run()
    at.checkbox(key="kgviz_build_ket").uncheck().run()
    assert at.slider(key="kgviz_build_beta").disabled
    button(at, "Build").click().run()
    assert not at.exception, at.exception
    assert any("no KET-RAG index" in t for t in texts(at, "info"))
    assert any("made no KET-RAG index" in t for t in texts(at, "caption"))
    assert not [f for f in frames(at) if list(f.columns) == CORE_COLUMNS]


def test_hostile_chunk_text_is_shown_as_text(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    hostile = "Ada <b>Lovelace</b> met **Babbage** at [the club](https://tracker.example/x) in London."
    at.file_uploader[0].set_value(("note.txt", hostile.encode(), "text/plain")).run()
    button(at, "Build").click().run()
    assert not at.exception, at.exception
    assert list(core_table(at)["excerpt"]) == [hostile]  # dataframes render text as is, never as markup
    shown = "\n".join(texts(at, "markdown") + texts(at, "caption"))
    assert "<b>Lovelace</b>" not in shown and "](https://tracker" not in shown
