from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.support.fake_server import FakeServer, Reply

from kgviz.errors import ConfigError, EmbedderUnavailableError
from kgviz.providers.base import Embedder
from kgviz.providers.embedders import HashingEmbedder, l2_normalise
from kgviz.providers.factory import make_embedder, parse_embedder_spec

SAMPLES = [
    "Marie Curie won the Nobel Prize in Physics in 1903.",
    "In 1903 the Nobel Prize in Physics went to Marie Curie.",
    "The recipe needs two cups of flour and a pinch of salt.",
    "",
]


# --- hashing ---------------------------------------------------------------------------------
def test_hashing_rows_are_unit_float32_and_empty_stays_zero() -> None:
    emb = HashingEmbedder()
    assert isinstance(emb, Embedder) and emb.id == "hashing-768" and emb.dim == 768
    m = emb.embed(SAMPLES)
    assert m.shape == (4, 768) and m.dtype == np.float32
    assert np.allclose(np.linalg.norm(m[:3], axis=1), 1.0, atol=1e-5)
    assert not m[3].any()
    assert emb.embed([]).shape == (0, 768)


def test_hashing_similar_texts_are_closer_than_unrelated() -> None:
    m = HashingEmbedder().embed(SAMPLES[:3])
    sims = m @ m.T
    assert sims[0, 1] > 0.4
    assert sims[0, 1] > sims[0, 2] + 0.3


def test_hashing_stopwords_count_less_than_content_words() -> None:
    emb = HashingEmbedder()
    q = emb.embed(["the of and to curie"])[0]
    content = emb.embed(["curie"])[0]
    stop = emb.embed(["the of and to"])[0]
    assert q @ content > q @ stop


def test_hashing_remembered_rows_equal_fresh_ones_bit_for_bit() -> None:
    """A row depends on its text alone, so the embedder remembers rows: a text embedded again,
    alone or in another batch, in another order or twice in one batch, gets the very vector a
    fresh embedder computes, and a caller changing the returned array changes nothing kept."""
    texts = [*SAMPLES, "Agnes Vohl founded the Ossel Marine Institute.", "Kellhaven lies on the Tarrow."]
    fresh = HashingEmbedder().embed(texts)
    emb = HashingEmbedder()
    first = emb.embed(texts[:3])
    first[:] = 0.0  # the caller's copy
    again = emb.embed(list(reversed(texts)) + [texts[1]])
    assert again.dtype == np.float32 and again.shape == (len(texts) + 1, 768)
    assert np.array_equal(again[: len(texts)], fresh[::-1]) and np.array_equal(again[-1], fresh[1])
    assert np.array_equal(emb.embed(texts[:3]), fresh[:3])


def test_hashing_forgetting_rows_changes_no_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its bound the remembered rows are dropped (and big batches, a build's, skip them):
    the vectors stay those of a fresh embedder."""
    from kgviz.providers import embedders

    monkeypatch.setattr(embedders, "_ROW_CACHE_MAX", 4)
    monkeypatch.setattr(embedders, "_ROW_CACHE_BATCH", 3)
    texts = [f"text number {i} about Curie" for i in range(6)]
    fresh = dict(zip(texts, HashingEmbedder()._embed(texts)))  # computed, never remembered
    emb = HashingEmbedder()
    for batch in (texts[:2], texts[2:4], texts[1:4], texts, texts[3:], texts[:2]):
        assert np.array_equal(emb.embed(batch), np.stack([fresh[t] for t in batch]))
        assert len(emb._rows) <= 4


def test_hashing_dim_is_in_the_id_and_the_spec() -> None:
    emb, notice = make_embedder("hashing:1024")
    assert (emb.id, emb.dim, notice) == ("hashing-1024", 1024, None)
    assert emb.embed(["a b"]).shape == (1, 1024)


_DIGEST_SNIPPET = """
import hashlib, sys
from kgviz.providers.embedders import HashingEmbedder, l2_normalise
texts = sys.argv[1:]
print(hashlib.sha256(HashingEmbedder().embed(texts).tobytes()).hexdigest())
"""


def test_hashing_is_deterministic_across_processes() -> None:
    local = hashlib.sha256(HashingEmbedder().embed(SAMPLES).tobytes()).hexdigest()
    digests = set()
    for seed in ("1", "2"):  # different hash seeds: Python's hash() would differ, ours must not
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", _DIGEST_SNIPPET, *SAMPLES], env=env,
                             capture_output=True, text=True, timeout=60, check=True)
        digests.add(out.stdout.strip())
    assert digests == {local}


# --- specs -----------------------------------------------------------------------------------
def test_embedder_specs_parse() -> None:
    assert parse_embedder_spec("hashing") == ("hashing", 768, None)
    assert parse_embedder_spec("fastembed:BAAI/bge-small-en-v1.5") == ("fastembed", "BAAI/bge-small-en-v1.5", None)
    kind, model, directory = parse_embedder_spec("fastembed:sentence-transformers/all-MiniLM-L6-v2@/models/minilm")
    assert (kind, model, directory) == ("fastembed", "sentence-transformers/all-MiniLM-L6-v2", Path("/models/minilm"))


@pytest.mark.parametrize("spec", ["", "hash", "hashing:abc", "hashing:8", "fastembed:@/x", "fastembed:m@", "sbert:x"])
def test_bad_embedder_specs_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError):
        make_embedder(spec)


# --- fastembed -------------------------------------------------------------------------------
_HUB_SNIPPET = """
import json
from kgviz.providers.factory import make_embedder
emb, notice = make_embedder("fastembed:BAAI/bge-small-en-v1.5", load_timeout_s=2)
print(json.dumps({"id": emb.id, "notice": notice}))
"""


@pytest.mark.slow
def test_unreachable_hub_falls_back_to_hashing_quickly(tmp_path: Path) -> None:
    # The hub is a loopback server that never answers while the test runs: no network is touched.
    # The fallback notice names the 2 s load timeout (so the timeout fired, not the hub's reply),
    # and the subprocess ending before the hub would answer proves the lingering download thread
    # does not keep the process alive (timeout= bounds a hang; it measures nothing).
    with FakeServer() as hub:
        hub.script(Reply(200, {}, delay_s=600))
        env = dict(os.environ, HF_ENDPOINT=hub.url, FASTEMBED_CACHE_PATH=str(tmp_path / "fe_cache"))
        env.pop("HF_HUB_OFFLINE", None)
        out = subprocess.run([sys.executable, "-c", _HUB_SNIPPET], env=env, capture_output=True, text=True,
                             timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["id"] == "hashing-768"
    assert "hashing embedder" in result["notice"] and "fastembed:BAAI/bge-small-en-v1.5" in result["notice"]
    assert "2 s" in result["notice"]


def test_hub_offline_flag_fails_fast_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbedderUnavailableError, match="HF_HUB_OFFLINE"):
        make_embedder("fastembed:BAAI/bge-small-en-v1.5", fallback=False, cache_dir=tmp_path / "empty")


def test_missing_local_dir_raises_without_fallback(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbedderUnavailableError, match="does not exist"):
        make_embedder(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{missing}", fallback=False)
    emb, notice = make_embedder(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{missing}")
    assert emb.id == "hashing-768" and notice is not None and str(missing) in notice


def test_local_dir_without_model_files_is_explained(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EmbedderUnavailableError, match="model.onnx"):
        make_embedder(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{tmp_path}", fallback=False)


def test_unknown_fastembed_model_is_explained() -> None:
    with pytest.raises(EmbedderUnavailableError, match="does not know"):
        make_embedder("fastembed:nobody/no-such-model", fallback=False)


# A real local model (all-MiniLM-L6-v2 int8): tests/providers/test_minilm_integration.py


class _LengthModel:
    """A scripted fastembed model: row = (text length, 1, 0...), and it records each batch."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self._lock = threading.Lock()

    def embed(self, texts: list[str], batch_size: int):  # noqa: ANN201 - mirrors fastembed's generator
        for start in range(0, len(texts), batch_size):
            batch = texts[start:start + batch_size]
            with self._lock:
                self.batches.append(batch)
            for t in batch:
                row = np.zeros(8, dtype=np.float32)
                row[0], row[1] = len(t), 1.0
                yield row


def _scripted_embedder(workers: int, batch_size: int, batch_tokens: int) -> tuple[Any, _LengthModel]:
    from kgviz.providers.embedders import FastEmbedEmbedder

    emb = object.__new__(FastEmbedEmbedder)  # the batching logic alone, no model files
    emb.model, emb.dim, emb.workers, emb._lock, emb._pool = "scripted", 8, workers, threading.Lock(), None
    emb.batch_size, emb.batch_tokens = batch_size, batch_tokens
    emb._token_lengths = lambda texts: [len(t) for t in texts]  # one token per character
    emb._model = fake = _LengthModel()
    return emb, fake


def test_plan_batches_sorts_by_length_and_caps_texts_and_padded_tokens() -> None:
    from kgviz.providers.embedders import plan_batches

    lengths = [9, 1, 5, 2, 7, 2, 30]
    # at most 3 texts and 10 padded tokens (texts x the longest): [1, 2, 2] = 6, + 5 would be 20
    assert plan_batches(lengths, max_tokens=10, max_texts=3) == [[1, 3, 5], [2], [4], [0], [6]]
    # a roomy budget: only the count cuts; equal lengths keep the input order (3 before 5)
    assert plan_batches(lengths, max_tokens=1000, max_texts=3) == [[1, 3, 5], [2, 4, 0], [6]]
    assert plan_batches(lengths, max_tokens=1000, max_texts=100) == [[1, 3, 5, 2, 4, 0, 6]]
    assert plan_batches([], 10, 3) == []
    with pytest.raises(ValueError, match="positive"):
        plan_batches([1], 0, 3)


def test_fastembed_batches_by_length_and_returns_rows_in_the_callers_order() -> None:
    emb, fake = _scripted_embedder(workers=1, batch_size=2, batch_tokens=100)
    texts = ["a" * 9, "b", "c" * 5, "d" * 2, "e" * 7]
    m = emb.embed(texts)
    assert fake.batches == [["b", "dd"], ["ccccc", "eeeeeee"], ["aaaaaaaaa"]]
    expected = l2_normalise(np.array([[len(t), 1] + [0] * 6 for t in texts], dtype=np.float64))
    assert np.allclose(m, expected)


def test_fastembed_embeds_each_distinct_text_once() -> None:
    emb, fake = _scripted_embedder(workers=1, batch_size=8, batch_tokens=1000)
    texts = ["bb", "a", "bb", "ccc", "a", "bb"]
    m = emb.embed(texts)
    assert sorted(t for batch in fake.batches for t in batch) == ["a", "bb", "ccc"]
    assert [round(float(r[0] / r[1])) for r in m] == [len(t) for t in texts]  # every row its own text's
    assert emb.embed([]).shape == (0, 8)


def test_fastembed_workers_give_the_same_rows_as_one() -> None:
    texts = [chr(97 + i % 26) * (1 + (i * 37) % 50) + str(i) for i in range(200)]
    one, _ = _scripted_embedder(workers=1, batch_size=8, batch_tokens=120)
    two, fake = _scripted_embedder(workers=3, batch_size=8, batch_tokens=120)
    assert np.array_equal(one.embed(texts), two.embed(texts))
    assert len(fake.batches) > 3 and all(len(b) * max(map(len, b)) <= 120 or len(b) == 1 for b in fake.batches)
    assert two._pool is not None  # the workers ran the batches


def test_a_local_directory_gets_autos_load_budget(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing is downloaded from a local directory, so an explicit ``fastembed:<m>@<dir>`` waits as
    long as ``auto`` would (a busy machine took over 5 s to read MiniLM); a hub model keeps 5 s."""
    from kgviz.provider_specs import AUTO_LOAD_TIMEOUT_S
    from kgviz.providers import factory
    from kgviz.providers.embedders import DEFAULT_LOAD_TIMEOUT_S

    seen: list[float] = []

    class Probe:
        def __init__(self, model: str, directory: object, *, load_timeout_s: float, cache_dir: object) -> None:
            seen.append(load_timeout_s)

    monkeypatch.setattr(factory, "FastEmbedEmbedder", Probe)
    factory.make_embedder(f"fastembed:some/model@{tmp_path}")
    factory.make_embedder("fastembed:some/model")
    factory.make_embedder("fastembed:some/model", load_timeout_s=1.5)
    assert seen == [AUTO_LOAD_TIMEOUT_S, DEFAULT_LOAD_TIMEOUT_S, 1.5]


def _reference_hashing(texts: list[str], dim: int) -> np.ndarray:
    """The hashing embedder as first written (one blake2b, weight and np.add.at per feature),
    kept here so the faster embed (issue 29) is pinned to the same vectors bit for bit."""
    import math
    import re
    from collections import Counter

    from kgviz.offline.stopwords import ENGLISH

    out = np.zeros((len(texts), dim), dtype=np.float64)
    rows, cols, vals = [], [], []
    for r, text in enumerate(texts):
        words = re.findall(r"[^\W_]+", text.lower())
        counts: Counter[str] = Counter(words)
        counts.update(f"{a} {b}" for a, b in zip(words, words[1:]))
        for feature, tf in counts.items():
            h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
            w = 1.0 + math.log(tf)
            if " " in feature:
                a, b = feature.split(" ", 1)
                stops = (a in ENGLISH) + (b in ENGLISH)
                w *= 0.2 if stops == 2 else 0.6 if stops == 1 else 1.0
            elif feature in ENGLISH:
                w *= 0.2
            rows.append(r)
            cols.append(h % dim)
            vals.append((1.0 if h >> 63 else -1.0) * w)
    if rows:
        np.add.at(out, (np.asarray(rows), np.asarray(cols)), np.asarray(vals))
    return l2_normalise(out)


def test_hashing_vectors_equal_the_reference_algorithm_bit_for_bit() -> None:
    texts = ["The Orrin Bridge's designer, Edda Lunn, was born in 1881.", "", "of the of the of the",
             "to be or not to be, that is the question", "Curie Curie Curie curie's", "x y x y x y z",
             "Ünïcode naïve café — 12,300 metres"] + [f"word{i % 7} and word{i % 5} of text {i}" for i in range(40)]
    for dim in (16, 768):
        emb = HashingEmbedder(dim)
        got = np.concatenate([emb.embed(texts[:5]), emb.embed(texts[5:])])  # the cache warm for the second call
        assert got.tobytes() == _reference_hashing(texts, dim).tobytes()


def test_hashing_feature_codes_are_the_slot_sign_and_stopword_factor() -> None:
    """``_codes`` (the embedder's one loop over new features) gives what ``_slot`` and
    ``_weight(feature, 1)`` define, for unigrams and bigrams with 0, 1 and 2 stopwords."""
    from kgviz.providers.embedders import _SIGNED

    emb = HashingEmbedder(768)
    features = ["bridge", "the", "of the", "bridge of", "of bridge", "orrin bridge", "ünïcode", "1881", "curie s"]
    features += [" ".join(p) for p in zip(features, reversed(features))]
    for feature, code in zip(features, emb._codes(features)):
        col, sign = emb._slot(feature)
        assert code >> 3 == col and _SIGNED[code & 7] == sign * emb._weight(feature, 1), feature
    assert {(c & 7) >> 1 for c in emb._codes(features)} == {0, 1, 2}  # factors 1.0, 0.2 and 0.6 all met


def test_hashing_gives_the_same_rows_whatever_its_feature_cache_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    import kgviz.providers.embedders as embedders

    texts = [f"the bridge of {i % 9} towns and the towns of {i % 4} bridges, {i}" for i in range(300)]
    whole = HashingEmbedder(64)._embed(texts)
    monkeypatch.setattr(embedders, "_FEATURE_CACHE_MAX", 40)  # cleared again and again
    small = HashingEmbedder(64)
    assert np.concatenate([small._embed(texts[i:i + 7]) for i in range(0, 300, 7)]).tobytes() == whole.tobytes()
    assert len(small._features) <= 40 + 7 * 30
