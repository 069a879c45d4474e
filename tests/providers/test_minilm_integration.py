"""A real neural embedder: all-MiniLM-L6-v2 (int8 ONNX) from a local directory, as
``scripts/make_minilm_dir.py DIR`` assembles it from two PyPI packages. Runs when
KGVIZ_TEST_MINILM_DIR names such a directory (.ci/run builds one and sets it); skipped otherwise,
so a developer's quick loop needs neither the packages nor the model."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from kgviz.config import Settings
from kgviz.errors import EmbedderMismatchError, EmbedderUnavailableError
from kgviz.provider_specs import AutoEmbedderParams
from kgviz.providers.embedder_auto import resolve_auto
from kgviz.providers.embedders import FastEmbedEmbedder
from kgviz.providers.factory import make_embedder
from kgviz.workspace import open_workspace, recorded_embedder
from kgviz.providers.embedder_auto import RecordedEmbedder

MINILM_DIR = os.environ.get("KGVIZ_TEST_MINILM_DIR", "").strip()
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
pytestmark = pytest.mark.skipif(
    not MINILM_DIR, reason="set KGVIZ_TEST_MINILM_DIR to a directory made by scripts/make_minilm_dir.py")

SIMILAR = ("Marie Curie won the Nobel Prize in Physics in 1903.",
           "In 1903 the physics Nobel went to Marie Curie.")
UNRELATED = "The recipe needs two cups of flour and a pinch of salt."
LOAD_S = 60.0  # generous: a busy CI machine; it bounds a hang, it measures nothing


def test_minilm_embeds_unit_vectors_of_384_dims_that_rank_meaning() -> None:
    emb, notice = make_embedder(f"fastembed:{MODEL}@{MINILM_DIR}", load_timeout_s=LOAD_S, fallback=False)
    assert notice is None and (emb.id, emb.dim) == (f"fastembed:{MODEL}", 384)
    m = emb.embed([*SIMILAR, UNRELATED])
    assert m.shape == (3, 384) and m.dtype == np.float32
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    sims = m @ m.T
    assert sims[0, 1] > 0.7 and sims[0, 1] > sims[0, 2] + 0.3 and sims[0, 1] > sims[1, 2] + 0.3
    # batches run length-sorted: every row still belongs to its own text
    one_by_one = np.vstack([emb.embed([t]) for t in (*SIMILAR, UNRELATED)])
    assert np.allclose(m, one_by_one, atol=1e-4)


def test_auto_picks_the_directory_in_kgviz_embedder_dir(tmp_path: Path) -> None:
    params = AutoEmbedderParams.from_env({"KGVIZ_EMBEDDER_DIR": MINILM_DIR,
                                          "FASTEMBED_CACHE_PATH": str(tmp_path / "empty")})
    emb, notice = resolve_auto(AutoEmbedderParams(params.model_dir, params.model, params.cache_dir, LOAD_S))
    assert notice is None and isinstance(emb, FastEmbedEmbedder)
    assert (emb.id, emb.dim, emb.model_dir) == (f"fastembed:{MODEL}", 384, Path(MINILM_DIR))


def test_a_workspace_built_under_auto_keeps_minilm(tmp_path: Path) -> None:
    env = {"KGVIZ_HOME": str(tmp_path / "home"), "KGVIZ_EMBEDDER": "auto", "FASTEMBED_CACHE_PATH": str(tmp_path / "e")}
    with_dir = Settings.from_env({**env, "KGVIZ_EMBEDDER_DIR": MINILM_DIR})
    db = tmp_path / "ws"
    with open_workspace(with_dir, db_dir=db, llm_spec="offline") as ws:
        assert ws.notices == [] and ws.store.embedder_id == f"fastembed:{MODEL}" and ws.store.dim == 384
    assert recorded_embedder(db) == RecordedEmbedder(f"fastembed:{MODEL}")  # the id, no machine path
    with open_workspace(with_dir, db_dir=db, llm_spec="offline") as ws:
        assert ws.notices == [] and ws.embedder.id == f"fastembed:{MODEL}"
        assert ws.embedder.embed([SIMILAR[0]]).shape == (1, 384)
    # without the directory the workspace is not silently opened with hashing
    with pytest.raises(EmbedderUnavailableError, match="all-MiniLM-L6-v2"):
        open_workspace(Settings.from_env(env), db_dir=db, llm_spec="offline")
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        open_workspace(with_dir, db_dir=db, llm_spec="offline", embedder_spec="hashing")


def _passages() -> list[str]:
    """Texts of very different lengths, one over MiniLM's 512 tokens, and repeats."""
    sentences = [*SIMILAR, UNRELATED, "Paris is the capital of France.", "Kuzu is an embedded graph database.",
                 "The Tidewell Line opened in 1911 and was extended north in 1923."]
    texts = [" ".join(sentences[j % len(sentences)] for j in range(i * 3 % 17 + 1)) for i in range(40)]
    texts += [" ".join(sentences * 40), "Short.", SIMILAR[0], texts[5]]  # truncated at 512 tokens; repeats
    return texts


def test_batched_vectors_equal_one_text_at_a_time_in_the_callers_order() -> None:
    """Length-sorted, token-budgeted batches on several workers give each text the vector that
    fastembed gives it alone (no padding at all), up to float noise, in the caller's order."""
    emb, _ = make_embedder(f"fastembed:{MODEL}@{MINILM_DIR}", load_timeout_s=LOAD_S, fallback=False)
    assert isinstance(emb, FastEmbedEmbedder)
    texts = _passages()
    alone = np.vstack([next(iter(emb._model.embed([t], batch_size=1))) for t in texts])
    for workers, batch_tokens in ((1, 4096), (2, 4096), (2, 300)):
        emb.workers, emb.batch_tokens = workers, batch_tokens
        m = emb.embed(texts)
        assert m.shape == (len(texts), 384)
        cosines = (m * alone).sum(axis=1) / np.linalg.norm(alone, axis=1)
        assert cosines.min() >= 0.9999, (workers, batch_tokens, float(cosines.min()))
    assert np.array_equal(m[-2], m[0]) and np.array_equal(m[-1], m[5])  # a repeat gets its text's row
