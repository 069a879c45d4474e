"""The ``auto`` embedder spec without a model on hand: where it looks, what it says when nothing
loads, that it never asks a hub, and that a workspace keeps the embedder it was built with.
(With a real model: tests/providers/test_minilm_integration.py.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests.support.fake_server import FakeServer, Reply

from kgviz.config import Settings
from kgviz.errors import EmbedderMismatchError, EmbedderUnavailableError
from kgviz.provider_specs import DIR_MODEL, AutoEmbedderParams
from kgviz.providers import embedders
from kgviz.providers.embedder_auto import RecordedEmbedder, load_recorded, resolve_auto
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.factory import make_embedder, parse_embedder_spec
from kgviz.workspace import open_workspace, recorded_embedder


def test_auto_is_the_default_spec_and_reads_its_variables() -> None:
    assert parse_embedder_spec("auto") == ("auto", "", None)
    s = Settings.from_env({})
    assert s.embedder_spec == "auto" and s.auto_embedder == AutoEmbedderParams(pulled_dir=Path.home() / ".kgviz" / "models")
    assert Settings.from_env({"KGVIZ_HOME": "/srv/kg"}).auto_embedder.pulled_dir == Path("/srv/kg/models")
    s = Settings.from_env({"KGVIZ_EMBEDDER_DIR": "~/models/minilm", "KGVIZ_EMBEDDER_MODEL": "BAAI/bge-small-en-v1.5",
                           "FASTEMBED_CACHE_PATH": "/var/cache/fe"})
    assert s.auto_embedder.model_dir == Path("~/models/minilm").expanduser()
    assert s.auto_embedder.model == "BAAI/bge-small-en-v1.5" and s.auto_embedder.cache_dir == Path("/var/cache/fe")
    assert AutoEmbedderParams.from_env({}).model == DIR_MODEL


def test_the_suite_pins_the_hashing_embedder() -> None:
    # tests/conftest.py: a model on the developer's machine must not change any test's behaviour
    assert os.environ.get("KGVIZ_EMBEDDER") == "hashing"
    assert "KGVIZ_EMBEDDER_DIR" not in os.environ
    assert Settings.from_env().embedder_spec == "hashing"


def test_no_model_anywhere_gives_hashing_and_says_where_it_looked(tmp_path: Path) -> None:
    emb, notice = resolve_auto(AutoEmbedderParams(cache_dir=tmp_path / "empty-cache"))
    assert isinstance(emb, HashingEmbedder) and emb.id == "hashing-768"
    assert notice is not None and "found no local model" in notice
    assert str(tmp_path / "empty-cache") in notice and "KGVIZ_EMBEDDER_DIR is not set" in notice
    assert "scripts/make_minilm_dir.py" in notice  # says how to get one
    with pytest.raises(EmbedderUnavailableError, match="found no local model"):
        make_embedder("auto", auto=AutoEmbedderParams(cache_dir=tmp_path / "empty-cache"), fallback=False)


def test_a_configured_dir_that_is_missing_or_incomplete_is_named(tmp_path: Path) -> None:
    emb, notice = resolve_auto(AutoEmbedderParams(model_dir=tmp_path / "nowhere"))
    assert emb.id == "hashing-768" and notice and f"KGVIZ_EMBEDDER_DIR={tmp_path / 'nowhere'}" in notice
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    emb, notice = resolve_auto(AutoEmbedderParams(model_dir=tmp_path / "half"))
    assert emb.id == "hashing-768" and notice is not None
    assert "could not load a model" in notice and "model.onnx" in notice and DIR_MODEL in notice


def test_a_load_that_does_not_finish_in_time_is_reported_as_a_timeout(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A scripted load that blocks until released stands in for a slow model load.
    release = threading.Event()

    def stuck_load(*args: object) -> object:
        release.wait(60)
        raise RuntimeError("released by the test")

    monkeypatch.setattr(embedders, "_load", stuck_load)
    (tmp_path / "model.onnx").write_bytes(b"x")
    (tmp_path / "tokenizer.json").write_text("{}")
    try:
        emb, notice = resolve_auto(AutoEmbedderParams(model_dir=tmp_path, timeout_s=0.3))
    finally:
        release.set()
    assert emb.id == "hashing-768" and notice is not None
    assert "timed out loading a model (budget 0.3 s)" in notice and "did not load from" in notice
    assert str(tmp_path) in notice


_NO_HUB_SNIPPET = """
import json, sys
from pathlib import Path
from kgviz.provider_specs import AutoEmbedderParams
from kgviz.providers.embedder_auto import resolve_auto
cache = Path(sys.argv[1])
out = {}
out["empty"] = resolve_auto(AutoEmbedderParams(cache_dir=cache))[1]
# a cache folder for the default model without its files: auto tries it, offline only
(cache / "models--Qdrant--bge-small-en-v1.5-onnx-Q" / "snapshots").mkdir(parents=True)
emb, out["partial"] = resolve_auto(AutoEmbedderParams(cache_dir=cache))
out["id"] = emb.id
print(json.dumps(out))
"""


def test_auto_never_contacts_a_model_hub(tmp_path: Path) -> None:
    # The hub is a loopback server that would answer slowly; auto must not send it one request,
    # even when the cache holds a folder for a model whose files are missing.
    with FakeServer() as hub:
        hub.script(*[Reply(200, {}, delay_s=30)] * 5)
        env = dict(os.environ, HF_ENDPOINT=hub.url)
        env.pop("HF_HUB_OFFLINE", None)
        out = subprocess.run([sys.executable, "-c", _NO_HUB_SNIPPET, str(tmp_path / "cache")], env=env,
                             capture_output=True, text=True, timeout=240)
        requests = list(hub.requests)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert requests == []
    assert "found no local model" in result["empty"]
    assert result["id"] == "hashing-768"
    assert "could not load a model" in result["partial"] and "BAAI/bge-small-en-v1.5" in result["partial"]
    assert "not in the local cache" in result["partial"]


# --- what a workspace was built with -----------------------------------------------------------
def test_a_recorded_hashing_embedder_is_loaded_again() -> None:
    emb = load_recorded(RecordedEmbedder("hashing-64"), AutoEmbedderParams())
    assert isinstance(emb, HashingEmbedder) and emb.dim == 64
    assert load_recorded(RecordedEmbedder("bench-16"), AutoEmbedderParams()) is None  # not an embedder id


def test_a_recorded_model_that_is_not_here_is_a_clear_error_not_a_fallback(tmp_path: Path) -> None:
    recorded = RecordedEmbedder(f"fastembed:{DIR_MODEL}")
    # a directory configured for another model is not used for this one
    other = AutoEmbedderParams(model_dir=tmp_path, model="BAAI/bge-small-en-v1.5", cache_dir=tmp_path / "empty")
    with pytest.raises(EmbedderUnavailableError) as err:
        make_embedder("auto", auto=other, recorded=recorded)
    msg = err.value.user_message()
    assert f"built with embedder fastembed:{DIR_MODEL}" in msg and "not in the local cache" in msg
    assert f"KGVIZ_EMBEDDER_MODEL={DIR_MODEL}" in msg


def _settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"KGVIZ_HOME": str(tmp_path / "home"), "KGVIZ_EMBEDDER": "auto",
                              "FASTEMBED_CACHE_PATH": str(tmp_path / "empty-cache"), **env})


def test_a_workspace_keeps_its_embedder_under_auto(tmp_path: Path) -> None:
    db = tmp_path / "ws"
    with open_workspace(_settings(tmp_path), db_dir=db, llm_spec="offline", embedder_spec="hashing:64") as ws:
        assert ws.notices == []
    assert recorded_embedder(db) == RecordedEmbedder("hashing-64")
    # auto here would fall back to hashing-768 on this machine; the workspace's embedder wins
    for spec in ("auto", None):
        with open_workspace(_settings(tmp_path), db_dir=db, llm_spec="offline", embedder_spec=spec) as ws:
            assert (ws.embedder.id, ws.store.embedder_id, ws.notices) == ("hashing-64", "hashing-64", [])
    # an explicit other embedder is refused with a typed error naming both
    with pytest.raises(EmbedderMismatchError, match="hashing-64"):
        open_workspace(_settings(tmp_path), db_dir=db, llm_spec="offline", embedder_spec="hashing:32")


def test_a_new_workspace_under_auto_records_what_auto_became(tmp_path: Path) -> None:
    db = tmp_path / "fresh"
    assert recorded_embedder(db) is None
    with open_workspace(_settings(tmp_path), db_dir=db, llm_spec="offline") as ws:
        assert ws.embedder.id == "hashing-768"
        assert len(ws.notices) == 1 and "found no local model" in ws.notices[0]
    assert recorded_embedder(db) == RecordedEmbedder("hashing-768")
    with open_workspace(_settings(tmp_path), db_dir=db, llm_spec="offline") as ws:
        assert ws.notices == []  # reopened: the recorded embedder, nothing to explain
