"""The int8-fused variant (kgviz.providers.encoder_fusion, int8_activations with INT8_FUSED): the
exported encoder's attention, GELU and residual sums rewritten into onnxruntime's fused kernels,
under its own embedder id.

The first tests build a one-layer graph spelt like the torch.export MiniLM's (the query and key
each scaled by head_size ** -0.25, the key transposed through Reshape/Transpose, an additive
-3.4e38 mask made from ``attention_mask``, Softmax with the ``Where(IsNaN(p), 0, p)`` guard, the
erf GELU, residual Add -> LayerNormalization) and need only the ``onnx`` package. The rest run on
the real all-MiniLM-L6-v2 when KGVIZ_TEST_MINILM_DIR names a directory made by
scripts/make_minilm_dir.py; it is converted once per module."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from kgviz import cli
from kgviz.config import Settings
from kgviz.errors import EmbedderMismatchError, EmbedderUnavailableError, ModelPullError
from kgviz.provider_specs import (
    INT8_ACTIVATIONS,
    INT8_FUSED,
    AutoEmbedderParams,
    parse_embedder_spec,
    split_variant,
    variant_name,
)
from kgviz.providers.embedder_auto import RecordedEmbedder, load_recorded
from kgviz.providers.embedders import DEFAULT_BATCH_TOKENS, FUSED_BATCH_TOKENS, FastEmbedEmbedder, graph_variant
from kgviz.providers.factory import make_embedder
from kgviz.providers.model_places import OUTPUT_FILES, pulled_model_dir, pulled_variant_dir
from kgviz.workspace import open_workspace

onnx = pytest.importorskip("onnx", reason="the onnx package (kgviz[int8] / kgviz[test]) makes the variant")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from kgviz.providers import encoder_fusion, int8_activations  # noqa: E402
from kgviz.providers.model_pull import pull_int8_fused  # noqa: E402
from tests.providers.test_int8_activations import _directory  # noqa: E402  (a directory that passes the load checks)

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
FUSED = variant_name(MODEL, INT8_FUSED)
UNFUSED = variant_name(MODEL, INT8_ACTIVATIONS)
MINILM_DIR = os.environ.get("KGVIZ_TEST_MINILM_DIR", "").strip()
needs_minilm = pytest.mark.skipif(
    not MINILM_DIR, reason="set KGVIZ_TEST_MINILM_DIR to a directory made by scripts/make_minilm_dir.py")
LOAD_S = 60.0  # bounds a hang on a busy CI machine; measures nothing
HIDDEN, HEADS, FF = 16, 4, 32


# --- a one-layer encoder spelt as the export spells it ---------------------------------------
def _layer_model(path: Path, seed: int = 0) -> None:
    """x[B, S, 16] (the embeddings), attention_mask[B, S] -> y[B, S, 16]: one BERT layer."""
    rng = np.random.default_rng(seed)
    head = HIDDEN // HEADS
    inits = {name: rng.normal(scale=0.3, size=shape).astype(np.float32) for name, shape in
             (("wq", (HIDDEN, HIDDEN)), ("wk", (HIDDEN, HIDDEN)), ("wv", (HIDDEN, HIDDEN)), ("wo", (HIDDEN, HIDDEN)),
              ("w1", (HIDDEN, FF)), ("w2", (FF, HIDDEN)), ("bq", (HIDDEN,)), ("b1", (FF,)))}
    inits.update({"c": np.array(head ** -0.25, np.float32), "zero": np.array(0.0, np.float32),
                  "neg": np.array(np.finfo(np.float32).min, np.float32), "heads": np.array([0, 0, HEADS, head]),
                  "merged": np.array([0, 0, HIDDEN]), "axes": np.array([1, 2]), "sqrt2": np.array(np.sqrt(2), np.float32),
                  "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32),
                  "gamma": np.ones(HIDDEN, np.float32), "beta": np.zeros(HIDDEN, np.float32)})
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "wq"], ["q0"]), n("Add", ["q0", "bq"], ["q"]),
        n("MatMul", ["x", "wk"], ["k"]), n("MatMul", ["x", "wv"], ["v"]),
        n("Reshape", ["q", "heads"], ["q4r"]), n("Transpose", ["q4r"], ["q4"], perm=[0, 2, 1, 3]),
        n("Reshape", ["k", "heads"], ["k4r"]), n("Transpose", ["k4r"], ["k4"], perm=[0, 2, 1, 3]),
        n("Transpose", ["k4"], ["kt"], perm=[0, 1, 3, 2]),
        n("Reshape", ["v", "heads"], ["v4r"]), n("Transpose", ["v4r"], ["v4"], perm=[0, 2, 1, 3]),
        n("Cast", ["attention_mask"], ["mask_b"], to=TensorProto.BOOL), n("Unsqueeze", ["mask_b", "axes"], ["mask4"]),
        n("Where", ["mask4", "zero", "neg"], ["bias"]),
        n("Mul", ["q4", "c"], ["qs"]), n("Mul", ["kt", "c"], ["ks"]), n("MatMul", ["qs", "ks"], ["s"]),
        n("Add", ["s", "bias"], ["sb"]), n("Softmax", ["sb"], ["p"], axis=-1),
        n("IsNaN", ["p"], ["nan"]), n("Where", ["nan", "zero", "p"], ["pg"]),
        n("MatMul", ["pg", "v4"], ["o4"]), n("Transpose", ["o4"], ["o4t"], perm=[0, 2, 1, 3]),
        n("Reshape", ["o4t", "merged"], ["o"]), n("MatMul", ["o", "wo"], ["ao"]),
        n("Add", ["ao", "x"], ["r1"]), n("LayerNormalization", ["r1", "gamma", "beta"], ["h1"], axis=-1, epsilon=1e-12),
        n("MatMul", ["h1", "w1"], ["f0"]), n("Add", ["f0", "b1"], ["f"]),
        n("Div", ["f", "sqrt2"], ["fd"]), n("Erf", ["fd"], ["fe"]), n("Add", ["fe", "one"], ["fp"]),
        n("Mul", ["half", "fp"], ["fh"]), n("Mul", ["f", "fh"], ["g"]),
        n("MatMul", ["g", "w2"], ["f2"]),
        n("Add", ["f2", "h1"], ["r2"]), n("LayerNormalization", ["r2", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-12),
    ]
    graph = helper.make_graph(
        nodes, "layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", HIDDEN]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["B", "S"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", HIDDEN])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _inputs(seed: int = 1) -> dict[str, np.ndarray]:
    """A padded batch: every row keeps at least its first position, as a tokenizer's [CLS]."""
    rng = np.random.default_rng(seed)
    lengths = np.array([9, 1, 5, 9, 3])
    return {"x": rng.normal(size=(5, 9, HIDDEN)).astype(np.float32),
            "attention_mask": (np.arange(9)[None, :] < lengths[:, None]).astype(np.int64)}


def _run(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["y"], feeds)[0])


def _fused(source: Path, out: Path) -> dict[str, int]:
    model = onnx.load(str(source))
    counts = int8_activations.fuse_encoder(model, HEADS)
    onnx.save(model, str(out))
    return counts


def test_the_variant_names_parse() -> None:
    assert FUSED == f"{MODEL}+int8-fused" and split_variant(FUSED) == (MODEL, INT8_FUSED)
    assert parse_embedder_spec(f"fastembed:{FUSED}@/models/f") == ("fastembed", FUSED, Path("/models/f"))


def test_the_exported_layer_becomes_fused_kernels_that_compute_the_same(tmp_path: Path) -> None:
    source, out = tmp_path / "layer.onnx", tmp_path / "fused.onnx"
    _layer_model(source)
    assert _fused(source, out) == {"attention": 1, "gelu": 1, "layer norms apart": 2}
    ops = [(n.domain, n.op_type) for n in onnx.load(str(out)).graph.node]
    assert ("com.microsoft", "MultiHeadAttention") in ops and ("com.microsoft", "Gelu") in ops
    assert not {"Softmax", "IsNaN", "Where", "Erf", "Transpose", "Reshape"} & {op for _, op in ops}
    assert [op for _, op in ops].count("Sum") == 2  # the residuals, which SkipLayerNormalization fusion skips
    mha = next(n for n in onnx.load(str(out)).graph.node if n.op_type == "MultiHeadAttention")
    attrs = {a.name: helper.get_attribute_value(a) for a in mha.attribute}
    assert attrs["num_heads"] == HEADS and attrs["scale"] == pytest.approx((HIDDEN // HEADS) ** -0.5, rel=1e-6)
    feeds = _inputs()
    before, after = _run(source, feeds), _run(out, feeds)
    # the same function: a padded key weighs exactly 0 under both masks, so only rounding differs
    assert np.isfinite(after).all() and np.abs(before - after).max() < 1e-4


def test_the_nan_guard_only_ever_replaces_nan(tmp_path: Path) -> None:
    """Softmax of finite scores plus 0 / -3.4e38 per key, with at least one key unmasked, is finite:
    the guard the fusion drops never fires on what the embedder feeds (here: a row with only its
    first key unmasked, and very large scores)."""
    source = tmp_path / "layer.onnx"
    _layer_model(source)
    feeds = _inputs()
    feeds["x"] = feeds["x"] * 1e3
    model = onnx.load(str(source))
    model.graph.output.append(helper.make_tensor_value_info("p", TensorProto.FLOAT, None))
    onnx.save(model, str(tmp_path / "probs.onnx"))
    import onnxruntime as ort

    probs = ort.InferenceSession(str(tmp_path / "probs.onnx"), providers=["CPUExecutionProvider"]).run(["p"], feeds)[0]
    assert np.isfinite(probs).all() and np.allclose(probs.sum(-1), 1.0, atol=1e-5)


def test_a_graph_it_cannot_fuse_whole_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "layer.onnx"
    _layer_model(source)
    model = onnx.load(str(source))
    guard = next(n for n in model.graph.node if n.op_type == "Where" and "nan" in n.input)
    guard.input[1] = "one"  # a guard that writes 1, not 0: not the export's, so not removable
    with pytest.raises(ModelPullError, match="rewrote 0 attention blocks"):
        int8_activations.fuse_encoder(model, HEADS)


def test_each_variant_name_refuses_the_other_graphs_directory_before_loading(tmp_path: Path) -> None:
    source = tmp_path / "layer.onnx"
    _layer_model(source)
    int8_activations.quantise_activations(source, tmp_path / "unfused.onnx")
    int8_activations.quantise_activations(source, tmp_path / "fused.onnx", INT8_FUSED, HEADS)
    assert graph_variant(source) is None
    assert graph_variant(tmp_path / "unfused.onnx") == INT8_ACTIVATIONS
    assert graph_variant(tmp_path / "fused.onnx") == INT8_FUSED
    dirs = {kind: _directory(tmp_path / kind, tmp_path / f"{kind}.onnx") for kind in ("unfused", "fused")}
    dirs["fp32"] = _directory(tmp_path / "fp32", source)
    with pytest.raises(EmbedderUnavailableError, match="holds the int8-fused variant .* not the int8-activations") as exc:
        FastEmbedEmbedder(UNFUSED, dirs["fused"])
    assert f"fastembed:{FUSED}@{dirs['fused']}" in exc.value.hint
    with pytest.raises(EmbedderUnavailableError, match="holds the int8-activations variant .* not the int8-fused"):
        FastEmbedEmbedder(FUSED, dirs["unfused"])
    with pytest.raises(EmbedderUnavailableError, match="holds the int8-fused variant") as exc:
        FastEmbedEmbedder(MODEL, dirs["fused"])
    assert f"fastembed:{FUSED}@{dirs['fused']}" in exc.value.hint
    with pytest.raises(EmbedderUnavailableError, match="holds no integer matrix products: it is not the int8-fused"):
        FastEmbedEmbedder(FUSED, dirs["fp32"])
    with pytest.raises(EmbedderUnavailableError, match="made locally"):
        FastEmbedEmbedder(FUSED)


def test_convert_needs_the_number_of_heads(tmp_path: Path) -> None:
    source = tmp_path / "layer.onnx"
    _layer_model(source)
    with pytest.raises(ModelPullError, match="attention heads"):
        int8_activations.quantise_activations(source, tmp_path / "out.onnx", INT8_FUSED)
    (tmp_path / "config.json").write_text('{"hidden_size": 16}', encoding="utf-8")
    with pytest.raises(ModelPullError, match="no num_attention_heads"):
        int8_activations.attention_heads(tmp_path)


# --- the real MiniLM --------------------------------------------------------------------------
# ours, measured here: the smallest cosine between a text's fp32 and int8-fused vectors over these
# texts was 0.9835 (the one-word "Short."; int8-activations: 0.9831), and 0.9960 between the
# int8-fused and int8-activations vectors; HotpotQA's 1,971 passages: README, Embedders. As for
# int8-activations, 0.975 leaves room for another CPU's rounding; a broken fusion lands far below.
MIN_COSINE = 0.975


SENTENCES = ["Marie Curie won the Nobel Prize in Physics in 1903.", "In 1903 the physics Nobel went to Marie Curie.",
             "The recipe needs two cups of flour and a pinch of salt.", "Paris is the capital of France.",
             "Kuzu is an embedded graph database.", "The Tidewell Line opened in 1911 and was extended north in 1923."]


def _texts() -> list[str]:
    """Texts of 1 to 17 sentences, one of 240 (cut at 512 tokens) and a one-word one."""
    return [" ".join(SENTENCES[j % len(SENTENCES)] for j in range(i * 3 % 17 + 1)) for i in range(30)] + [
        " ".join(SENTENCES * 40), "Short."]


@pytest.fixture(scope="module")
def variant_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The CI-built MiniLM, converted once into each variant for this module."""
    if not MINILM_DIR:
        pytest.skip("set KGVIZ_TEST_MINILM_DIR to a directory made by scripts/make_minilm_dir.py")
    root = tmp_path_factory.mktemp("minilm")
    return {kind: int8_activations.convert(Path(MINILM_DIR), root / kind, kind) for kind in (INT8_ACTIVATIONS, INT8_FUSED)}


@needs_minilm
def test_the_minilm_variant_has_fused_kernels_and_the_stored_integer_weights(variant_dirs: dict[str, Path]) -> None:
    fused = variant_dirs[INT8_FUSED]
    ops = [n.op_type for n in onnx.load(str(fused / "model.onnx")).graph.node]
    assert ops.count("MatMulInteger") == 36  # 6 layers x (q, k, v, out, 2 feed-forward), as unfused
    assert ops.count("MultiHeadAttention") == 6 and ops.count("Gelu") == 6 and ops.count("Sum") == 13
    assert not {"Softmax", "IsNaN", "Where", "Erf", "Transpose"} & set(ops)
    assert int8_activations.integer_weights_match(Path(MINILM_DIR) / "model.onnx", fused / "model.onnx")
    assert graph_variant(fused / "model.onnx") == INT8_FUSED
    for name in OUTPUT_FILES[1:]:
        assert (fused / name).read_bytes() == (Path(MINILM_DIR) / name).read_bytes()


def _embedders(variant_dirs: dict[str, Path]) -> dict[str, Any]:
    specs = {"fp32": f"fastembed:{MODEL}@{MINILM_DIR}", INT8_ACTIVATIONS: f"fastembed:{UNFUSED}@{variant_dirs[INT8_ACTIVATIONS]}",
             INT8_FUSED: f"fastembed:{FUSED}@{variant_dirs[INT8_FUSED]}"}
    return {kind: make_embedder(spec, load_timeout_s=LOAD_S, fallback=False)[0] for kind, spec in specs.items()}


@needs_minilm
def test_fused_vectors_are_close_to_fp32_under_their_own_id(variant_dirs: dict[str, Path]) -> None:
    emb = _embedders(variant_dirs)
    assert emb[INT8_FUSED].id == f"fastembed:{FUSED}" and len({e.id for e in emb.values()}) == 3
    # its own batch budget (its kernels run from the cache); the others keep theirs
    assert emb[INT8_FUSED].batch_tokens == FUSED_BATCH_TOKENS < DEFAULT_BATCH_TOKENS == emb[INT8_ACTIVATIONS].batch_tokens
    texts = _texts()
    vectors = {kind: e.embed(texts) for kind, e in emb.items()}
    fused = vectors[INT8_FUSED]
    assert fused.dtype == np.float32 and np.allclose(np.linalg.norm(fused, axis=1), 1.0, atol=1e-5)
    cosines = (vectors["fp32"] * fused).sum(axis=1)
    assert cosines.min() >= MIN_COSINE, float(cosines.min())
    assert not np.array_equal(fused, vectors[INT8_ACTIVATIONS])  # another graph: why the ids differ
    three = emb[INT8_FUSED].embed(SENTENCES[:3])  # two alike, one unrelated
    sims = three @ three.T
    assert sims[0, 1] > sims[0, 2] + 0.3


@needs_minilm
@pytest.mark.parametrize("built_with", [INT8_ACTIVATIONS, INT8_FUSED])
def test_a_workspace_built_with_one_integer_variant_refuses_the_other(
        variant_dirs: dict[str, Path], tmp_path: Path, built_with: str) -> None:
    specs = {INT8_ACTIVATIONS: f"fastembed:{UNFUSED}@{variant_dirs[INT8_ACTIVATIONS]}",
             INT8_FUSED: f"fastembed:{FUSED}@{variant_dirs[INT8_FUSED]}"}
    other = INT8_FUSED if built_with == INT8_ACTIVATIONS else INT8_ACTIVATIONS
    settings = Settings.from_env({"KGVIZ_HOME": str(tmp_path / "home"), "KGVIZ_EMBEDDER": "hashing"})
    db = tmp_path / "ws"
    with open_workspace(settings, db_dir=db, llm_spec="offline", embedder_spec=specs[built_with]) as ws:
        assert ws.store.embedder_id == ws.embedder.id == f"fastembed:{variant_name(MODEL, built_with)}"
    with pytest.raises(EmbedderMismatchError, match=rf"\+{other}"):
        open_workspace(settings, db_dir=db, llm_spec="offline", embedder_spec=specs[other])


@needs_minilm
def test_the_script_makes_the_fused_variant_beside_an_assembled_model(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_minilm_dir", Path(__file__).parents[2] / "scripts" / "make_minilm_dir.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    source, made = tmp_path / "minilm", tmp_path / "fused"
    shutil.copytree(MINILM_DIR, source)  # complete: nothing is downloaded
    assert script.main([str(source), "--int8-fused", str(made)]) == 0
    assert f"fastembed:{FUSED}@{made}" in capsys.readouterr().out
    assert graph_variant(made / "model.onnx") == INT8_FUSED
    assert script.main([str(source), "--int8-fused", str(made)]) == 0
    assert "(already converted)" in capsys.readouterr().out


@needs_minilm
def test_models_pull_makes_the_fused_variant_and_an_auto_workspace_keeps_its_embedder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    models = home / "models"
    shutil.copytree(MINILM_DIR, pulled_model_dir(models))  # what the registry route leaves: nothing to download
    env = {"KGVIZ_HOME": str(home), "FASTEMBED_CACHE_PATH": str(tmp_path / "empty"), "KGVIZ_EMBEDDER": "auto"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("KGVIZ_EMBEDDER_DIR", raising=False)
    settings = Settings.from_env(env)
    db = tmp_path / "ws"
    with open_workspace(settings, db_dir=db, llm_spec="offline", embedder_spec="auto") as ws:  # built before the pull
        assert ws.store.embedder_id == f"fastembed:{MODEL}"
    assert cli.main(["models", "pull", "--int8-fused", "--json"]) == 0
    pulled = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    made = pulled_variant_dir(models, INT8_FUSED)
    assert pulled["route"] == "present" and pulled["variants"] == [
        {"route": "converted", "model": FUSED, "location": str(made), "skipped": []}]
    assert graph_variant(made / "model.onnx") == INT8_FUSED
    again = pull_int8_fused(models, downloader=_no_download)
    assert (again.route, again.location) == ("present", made)
    assert cli.main(["models", "status", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert shown["embedder"] == f"fastembed:{MODEL}"  # auto keeps the fp32 model (README: why)
    assert shown["variants"] == [{"spec": f"fastembed:{FUSED}@{made}", "model_dir": str(made)}]
    with open_workspace(settings, db_dir=db, llm_spec="offline", embedder_spec="auto") as ws:
        assert ws.embedder.id == ws.store.embedder_id == f"fastembed:{MODEL}"  # the existing workspace kept its embedder
    # a workspace built with the pulled variant finds it again by its id alone
    params = AutoEmbedderParams.from_env(env)
    found = load_recorded(RecordedEmbedder(f"fastembed:{FUSED}"), AutoEmbedderParams(
        pulled_dir=params.pulled_dir, cache_dir=params.cache_dir, timeout_s=LOAD_S))
    assert found is not None and found.id == f"fastembed:{FUSED}" and found.model_dir == made


def _no_download(requirements: Sequence[str], folder: Path) -> None:
    raise AssertionError(f"nothing may be downloaded: {requirements}")
