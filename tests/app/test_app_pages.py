"""The app's pages driven headlessly with streamlit.testing.v1.AppTest (offline, hashing embedder)."""
from __future__ import annotations

import pytest

from pathlib import Path

from streamlit.testing.v1 import AppTest

from kgviz.graph.store import GraphStore

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
RUN_TIMEOUT = 120  # seconds for a run that builds the sample corpus
OFFLINE = "offline heuristics — no LLM"


def new_app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=RUN_TIMEOUT)


def texts(at: AppTest, kind: str) -> list[str]:
    """Values of every element of one kind (info, success, error, caption, markdown ...)."""
    return [str(getattr(e, "value", "")) for e in getattr(at, kind)]


def all_text(at: AppTest) -> str:
    parts: list[str] = []
    for kind in ("title", "subheader", "markdown", "caption", "info", "success", "warning", "error", "text", "code"):
        parts.extend(texts(at, kind))
    return "\n".join(parts)


def _button(at: AppTest, label: str):  # noqa: ANN202 - AppTest element type
    return next(b for b in at.button if b.label == label)


def _load_sample_via_home(at: AppTest) -> None:
    _button(at, "Load sample data").click().run()
    assert not at.exception, at.exception
    assert any("Sample built" in t for t in texts(at, "success")), all_text(at)


def test_home_renders_status_and_sample_button_builds(app_env: Path) -> None:
    at = new_app().run()
    assert not at.exception, at.exception
    assert texts(at, "title") == ["kgviz"]
    assert any(OFFLINE in t for t in texts(at, "info"))
    assert any("Embedder: hashing-" in t for t in texts(at, "caption"))
    assert any("Empty" in t for t in texts(at, "markdown"))
    _load_sample_via_home(at)
    assert any("documents" in t and "entities" in t for t in texts(at, "markdown"))  # summary is fresh
    store = GraphStore.open(app_env)  # same process: shares the app's Database
    counts = store.counts()
    assert counts["Document"] >= 10 and counts["Entity"] > 0 and counts["Triple"] > 0
    # a second click adds nothing (idempotent build)
    _button(at, "Load sample data").click().run()
    assert any("0 new documents" in t for t in texts(at, "success"))


def test_home_creates_and_switches_workspace(app_env: Path) -> None:
    at = new_app().run()
    at.text_input(key="kgviz_new_workspace").set_value("lecture-3").run()
    _button(at, "Create and switch").click().run()
    assert not at.exception
    assert at.selectbox(key="kgviz_workspace").value.endswith("lecture-3")
    assert any(t.endswith("lecture-3") for t in texts(at, "code"))
    at.text_input(key="kgviz_new_workspace").set_value("../escape").run()
    _button(at, "Create and switch").click().run()
    assert any("invalid workspace name" in t for t in texts(at, "error"))


def test_build_page_builds_sample_and_shows_report(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    assert not at.exception, at.exception
    at.radio[0].set_value("Sample corpus").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["estimated cost"] == "$0 (offline)"
    assert int(metrics["chunks"].replace(",", "")) > 0
    # offline sends nothing, but the page says what an LLM build would take (not "0 / 0")
    tin, tout = (int(x.replace(",", "")) for x in metrics["tokens if built with an LLM (in / out)"].split(" / "))
    assert tin > 0 and tout > 0 and "tokens (in / out)" not in metrics
    _button(at, "Build").click().run()
    assert not at.exception, at.exception
    assert "Build report" in texts(at, "subheader")
    assert len(at.get("plotly_chart")) >= 2  # counts by type + degree distribution
    frames = [df.value for df in at.dataframe]
    table = next(f for f in frames if list(f.columns) == ["table", "rows"])
    assert dict(zip(table["table"], table["rows"]))["Entity"] > 0
    usage = [f for f in frames if "input tokens" in f.columns]
    assert all(f["$"].sum() == 0 for f in usage)  # offline costs nothing
    assert usage or any("No LLM calls" in t for t in texts(at, "caption"))
    assert any(OFFLINE in t for t in texts(at, "caption"))


def test_build_page_lists_bad_upload_and_builds_the_rest(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    at.file_uploader[0].set_value([("empty.txt", b"", "text/plain"),
                                   ("note.md", b"# Note\n\nAda Lovelace worked with Charles Babbage in London.\n",
                                    "text/markdown")]).run()
    assert not at.exception, at.exception
    assert any("rejected" in t for t in texts(at, "error"))
    rejected = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert list(rejected["file"]) == ["empty.txt"] and "empty" in rejected["reason"][0]
    assert any("1 document(s) ready" in t for t in texts(at, "markdown"))


def test_build_page_only_bad_upload_shows_error_not_traceback(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    at.file_uploader[0].set_value(("empty.txt", b"   \n", "text/plain")).run()
    assert not at.exception, at.exception
    assert any("rejected" in t for t in texts(at, "error"))
    assert not [b for b in at.button if b.label == "Build"]  # nothing to build


def test_explore_search_renders_graph_and_details(app_env: Path) -> None:
    at = new_app().run()
    _load_sample_via_home(at)
    at.switch_page("pages/explore.py").run()
    assert not at.exception, at.exception
    at.text_input[0].set_value("vohl").run()
    assert not at.exception, at.exception
    picker = next(s for s in at.selectbox if s.label == "Entity")
    assert "Vohl" in picker.options[0]
    frames = at.get("iframe")
    assert len(frames) == 1
    page = frames[0].proto.srcdoc
    assert "vis.Network" in page and "https://" not in page.split("<script>")[0]
    assert any(t.startswith("showing ") and " of " in t for t in texts(at, "caption"))
    assert any(t.startswith("**Triples (") for t in texts(at, "markdown"))
    assert len(at.expander) >= 1  # source chunks with raw extraction output


def test_explore_empty_workspace_says_so(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/explore.py").run()
    assert not at.exception
    assert any("no entities yet" in t for t in texts(at, "info"))


def test_embedder_mismatch_is_a_readable_error(app_env: Path) -> None:
    at = new_app().run()
    _load_sample_via_home(at)
    at.text_input(key="kgviz_embedder").set_value("hashing:32").run()
    at.switch_page("pages/explore.py").run()
    assert not at.exception, at.exception
    errors = texts(at, "error")
    assert errors and "hashing-768" in errors[0] and "hashing-32" in errors[0]
    # the choice survives page switches (it is drawn by each page)
    assert at.text_input(key="kgviz_embedder").value == "hashing:32"


def test_api_key_stays_in_session(app_env: Path) -> None:
    secret = "sk-test-DO-NOT-PERSIST-123"
    at = new_app().run()
    at.selectbox(key="kgviz_llm_choice").set_value("anthropic:claude-haiku-4-5").run()
    assert any("no API key" in t for t in texts(at, "warning"))  # MissingKeyError, shown not raised
    at.text_input(key="kgviz_api_key").set_value(secret).run()
    assert not at.exception, at.exception
    assert any("LLM: anthropic:claude-haiku-4-5" in t for t in texts(at, "success"))
    at.switch_page("pages/build.py").run()  # the choice and the key survive a page switch
    assert at.text_input(key="kgviz_api_key").value == secret
    assert any("LLM: anthropic:claude-haiku-4-5" in t for t in texts(at, "success"))
    home = app_env.parents[1]
    for f in home.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f


def _boundary_app(kind: str) -> None:
    import streamlit as st

    from kgviz.errors import DatabaseLockedError
    from kgviz.ui import error_boundary

    with error_boundary("Open"):
        if kind == "expected":
            raise DatabaseLockedError("the database /x is used by another process", hint="close the other kgviz")
        raise ValueError("a bug")
    st.write("after")


@pytest.mark.allow_ui_bugs
def test_error_boundary_shows_expected_errors_and_reports_bugs_without_a_traceback() -> None:
    at = AppTest.from_function(_boundary_app, args=("expected",)).run()
    assert not at.exception
    assert texts(at, "error") == ["Open: the database /x is used by another process — close the other kgviz"]
    assert texts(at, "markdown") == ["after"]
    # issue 10: a bug is a short message plus a collapsed traceback, not Streamlit's full-page trace
    at = AppTest.from_function(_boundary_app, args=("bug",)).run()
    assert not at.exception
    (error,) = texts(at, "error")
    assert error.startswith("Open: unexpected error \\(ValueError: a bug\\)")
    assert [e.label for e in at.expander] == ["Details"] and "ValueError: a bug" in texts(at, "code")[0]
    assert texts(at, "markdown") == ["after"]


def test_embedder_fallback_notice_is_visible(app_env: Path, tmp_path: Path) -> None:
    at = new_app().run()
    spec = f"fastembed:BAAI/bge-small-en-v1.5@{tmp_path / 'no-such-model'}"
    at.text_input(key="kgviz_embedder").set_value(spec).run()
    assert not at.exception, at.exception
    warnings = texts(at, "warning")
    assert any("is a fallback: no neural embedder loaded" in w for w in warnings), warnings  # short
    why = [str(c.value) for e in at.sidebar.expander for c in e.caption]  # the full reason, folded below it
    assert any("Using the offline hashing embedder" in w and "no-such-model" in w for w in why), why


def test_hostile_file_name_is_shown_as_text(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    name = "![x](https://tracker.example/p.png)_a_.txt"
    at.file_uploader[0].set_value((name, b"\x00\x01\x02binary\x00" * 50, "text/plain")).run()
    assert not at.exception, at.exception
    rejected = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert list(rejected["file"]) == [name]  # dataframes show text as is


def test_md_text_neutralises_markdown() -> None:
    from kgviz.ui.render import md_text

    out = md_text("![x](https://t.example/p.png) **b** :red[c] $x$ <img src=x>\nnext_line")
    for raw in ("![", "](", "**", ":red[", "$x$", " <img"):
        assert raw not in out
    assert "\n" not in out and "next\\_line" in out
