"""The app's error boundary: a database held by another process, a bad setting and an unexpected
bug each show a message on every page, never Streamlit's traceback; names with bidi characters are
shown escaped."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from kgviz.graph.store import GraphStore

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGES = ("pages/home.py", "pages/build.py", "pages/explore.py", "pages/trace.py", "pages/compare.py",
         "pages/evaluate.py")


def texts(at: AppTest, kind: str) -> list[str]:
    return [str(getattr(e, "value", "")) for e in getattr(at, kind)]


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    if page != "pages/home.py":
        at.switch_page(page).run()
    return at


@pytest.fixture
def locked_db(app_env: Path) -> Iterator[Path]:
    """The workspace database, held open by a second process (Kùzu's file lock)."""
    GraphStore.open(app_env, embedder_id="hashing-768", dim=768).close()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = textwrap.dedent(f"""
        import time
        from kgviz.graph.store import GraphStore
        store = GraphStore.open({str(app_env)!r})
        print("ready", flush=True)
        time.sleep(300)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        assert line == "ready", child.stderr.read() if child.stderr else line
        yield app_env
    finally:
        child.kill()
        child.wait(timeout=30)


def test_locked_database_is_one_line_on_every_page(locked_db: Path) -> None:
    for page in PAGES:
        at = open_page(page)
        assert not at.exception, (page, at.exception)
        errors = texts(at, "error")
        locked = [e for e in errors if "is locked" in e and "another kgviz process" in e]
        assert locked, (page, errors)
        assert all("\n" not in e for e in locked)
        assert "graph.kuzu" in locked[0]
        assert not [e for e in errors if "unexpected error" in e], (page, errors)


@pytest.mark.parametrize("var, value, expected", [
    ("KGVIZ_MAX_RETRIES", "-1", "KGVIZ\\_MAX\\_RETRIES=-1 is out of range: must be a whole number from 0 to 10"),
    ("KGVIZ_TIMEOUT_S", "abc", "KGVIZ\\_TIMEOUT\\_S='abc' is not a number: must be a number from 0.1 to 3600"),
])
def test_bad_setting_is_shown_on_every_page(app_env: Path, monkeypatch: pytest.MonkeyPatch,
                                            var: str, value: str, expected: str) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()  # a good start, then the setting breaks
    monkeypatch.setenv(var, value)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert texts(at, "error") == [expected + " — fix it and restart kgviz."], page
    assert not app_env.exists()


def test_home_under_a_file_is_shown_not_raised(app_env: Path, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "file" / "kgviz"))
    monkeypatch.delenv("KGVIZ_DB")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    (error,) = texts(at, "error")
    assert error.startswith("KGVIZ\\_HOME=") and "is under a file" in error


def _bug_app() -> None:
    from kgviz.ui import error_boundary

    with error_boundary("Explore"):
        raise ValueError("index 7 out of range\nsecond line")


@pytest.mark.allow_ui_bugs
def test_unexpected_error_is_a_short_message_with_details() -> None:
    at = AppTest.from_function(_bug_app).run()
    assert not at.exception
    (error,) = texts(at, "error")
    assert error.startswith("Explore: unexpected error \\(ValueError: index 7 out of range\\)")
    assert "second line" not in error
    assert [e.label for e in at.expander] == ["Details"]
    details = texts(at, "code")
    assert len(details) == 1 and "Traceback" in details[0] and "second line" in details[0]


def _bidi_app(name: str) -> None:
    import streamlit as st

    from kgviz.ui.render import md_text, plain

    st.caption(md_text(f"Entity: {name}"))
    st.selectbox("Entity", [name], format_func=plain)


def test_bidi_names_are_shown_escaped() -> None:
    name = "Vohl\u202egpj.exe\u2066x\u2069\u200f"
    at = AppTest.from_function(_bidi_app, args=(name,)).run()
    assert not at.exception
    caption = texts(at, "caption")[0]
    assert all(ch not in caption for ch in "\u202e\u2066\u2069\u200f")
    assert caption == "Entity: Vohl\\\\u202egpj.exe\\\\u2066x\\\\u2069\\\\u200f"  # md-escaped backslashes
    assert at.selectbox[0].options == ["Vohl\\u202egpj.exe\\u2066x\\u2069\\u200f"]


def test_build_page_accepts_every_allowed_worker_count(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # regression: the Workers input stopped at 32, so KGVIZ_WORKERS=40 (a valid setting) broke the page
    monkeypatch.setenv("KGVIZ_WORKERS", "64")
    at = open_page("pages/build.py")
    assert not at.exception, at.exception
    assert not texts(at, "error")
    assert next(n for n in at.number_input if n.label == "Workers").value == 64


def test_explore_shows_a_bidi_entity_name_escaped(app_env: Path, tmp_path: Path) -> None:
    from kgviz.cli import main

    tsv = tmp_path / "kg.tsv"
    tsv.write_text("head\trelation\ttail\nVohl\u202egpj.exe\tlocated in\tBrannock\n", encoding="utf-8")
    assert main(["import-kg", str(tsv), "--db", str(app_env), "--embedder", "hashing"]) == 0
    GraphStore.open(app_env).close()  # release this process's handle before the app opens it
    at = open_page("pages/explore.py")
    at.text_input[0].set_value("vohl").run()
    assert not at.exception, at.exception
    picker = next(s for s in at.selectbox if s.label == "Entity")
    shown = list(picker.options)  # AppTest holds the formatted option labels
    assert any("Vohl\\u202egpj.exe" in o for o in shown), shown
    assert not any("\u202e" in o for o in shown)
    page = at.get("iframe")[0].proto.srcdoc
    assert "Vohl\\\\u202egpj.exe" in page  # the JSON of the node label holds the escape, not the character
    assert "\\u202e" not in page.replace("\\\\u202e", "")
