"""Home page: the sample loaded with recorded replies of a model (a recording made here with a
scripted model, so this test does not depend on the bundled recording's contents)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kgviz import replay
from kgviz.graph.store import GraphStore
from kgviz.offline.extract import extract_offline
from kgviz.providers.recorded import RecordingLLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "providers"))
from test_recorded import Scripted  # noqa: E402
from test_app_pages import _button, all_text, new_app, texts  # noqa: E402


def plain(at, kind: str) -> str:  # noqa: ANN001
    """Every element's text of one kind, without md_text's escapes."""
    return " ".join(texts(at, kind)).replace("\\", "")


class TripleModel(Scripted):
    def complete(self, messages, *, system=None, max_tokens=1024, json_schema=None):  # noqa: ANN001, ANN201
        done = super().complete(messages, system=system, max_tokens=max_tokens, json_schema=json_schema)
        # a fact of the chunk (the build keeps only facts whose names are in it, issue 23): the
        # offline extractor's first stated relation, a different one in each of the 15 chunks
        text = messages[-1].content.rsplit("Text: ", 1)[1].rsplit("\nTriples:", 1)[0]
        first = next(t for t in extract_offline(text).triples if t.depth() == 1 and t.kind == "relation")
        done.text = first.render()
        return done


@pytest.fixture
def recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "recorded"
    rec = RecordingLLM(TripleModel("tiny-model"), folder, "extraction.tiny-model.jsonl",
                       {"phase": "extraction", "recorded_at": "2026-11-23T16:00:00+00:00", "kgviz_commit": "abc123"})
    session = replay.open_session(tmp_path / "db", rec)
    try:
        # an extraction-only recording (no description phase), as the app then builds it
        replay.build_sample(session, described=False)
    finally:
        session.close()
    monkeypatch.setattr(replay, "SAMPLE_RECORDING", folder)
    return folder


def test_home_loads_the_sample_from_recorded_replies(app_env: Path, recording: Path) -> None:
    at = new_app().run()
    assert not at.exception, at.exception
    radio = at.radio[0]
    assert radio.options == ["offline heuristics", "recorded from tiny-model"]
    radio.set_value("recorded from tiny-model").run()
    assert "extraction by tiny-model on 2026-11-23 (kgviz abc123)" in plain(at, "caption")
    _button(at, "Load sample data").click().run()
    assert not at.exception, at.exception
    success = plain(at, "success")
    assert "Sample built: 15 new documents" in success, all_text(at)
    assert "Recorded replies (recorded:tiny-model): 15 calls" in success
    assert "LLM: recorded:tiny-model" in success  # the sidebar now replays the recording
    workspace = app_env.parent / "sample-recorded"
    assert at.selectbox(key="kgviz_workspace").value == str(workspace)
    counts = GraphStore.open(workspace).counts()
    assert counts["Document"] == 15 and counts["Triple"] == 15  # one recorded triple per chunk


def test_home_offline_choice_builds_with_heuristics(app_env: Path, recording: Path) -> None:
    at = new_app().run()
    at.radio[0].set_value("offline heuristics").run()
    _button(at, "Load sample data").click().run()
    assert not at.exception, at.exception
    assert any("Sample built: 15 new documents" in t for t in texts(at, "success"))
    assert "Recorded replies" not in all_text(at)
    assert at.selectbox(key="kgviz_workspace").value == str(app_env)


def test_recorded_replay_of_other_documents_is_a_clear_error(app_env: Path, recording: Path) -> None:
    """The recording covers the sample only: a document it never saw fails with the typed message."""
    at = new_app().run()
    at.radio[0].set_value("recorded from tiny-model").run()
    _button(at, "Load sample data").click().run()
    at.switch_page("pages/build.py").run()
    at.file_uploader[0].set_value(("note.md", b"# Note\n\nEdda Lunn designed the Orrin Bridge in 1921.\n",
                                   "text/markdown")).run()
    _button(at, "Build").click().run()
    assert not at.exception, at.exception
    errors = plain(at, "error")
    assert "has no reply for a prompt" in errors and "recorded with tiny-model" in errors, all_text(at)
