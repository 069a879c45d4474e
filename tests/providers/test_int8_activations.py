"""The int8-activations variant (kgviz.providers.int8_activations): a model whose weight products
run as integer MatMulInteger, under its own embedder id, never mixed with the fp32 model.

The first tests build a two-layer ONNX graph shaped like the assembled MiniLM's weight chains
(``Cast(int8 W) -> Mul(column scales) -> MatMul``) and need only the ``onnx`` package (the test
extra pins it). The rest run on the real all-MiniLM-L6-v2 when KGVIZ_TEST_MINILM_DIR names a
directory made by scripts/make_minilm_dir.py (.ci/run builds one); it is converted once per module."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from kgviz import cli
from kgviz.config import Settings
from kgviz.errors import EmbedderMismatchError, EmbedderUnavailableError, ModelPullError
from kgviz.provider_specs import AutoEmbedderParams, parse_embedder_spec, split_variant, variant_name
from kgviz.providers.embedder_auto import RecordedEmbedder, load_recorded
from kgviz.providers.embedders import FastEmbedEmbedder, has_integer_matmuls
from kgviz.providers.factory import make_embedder
from kgviz.providers.model_places import OUTPUT_FILES, pulled_model_dir
from kgviz.workspace import open_workspace

onnx = pytest.importorskip("onnx", reason="the onnx package (kgviz[int8] / kgviz[test]) makes the variant")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from kgviz.providers import int8_activations  # noqa: E402
from kgviz.providers.model_pull import local_variants, pull_int8_activations  # noqa: E402

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
VARIANT = variant_name(MODEL)
MINILM_DIR = os.environ.get("KGVIZ_TEST_MINILM_DIR", "").strip()
needs_minilm = pytest.mark.skipif(
    not MINILM_DIR, reason="set KGVIZ_TEST_MINILM_DIR to a directory made by scripts/make_minilm_dir.py")
LOAD_S = 60.0  # bounds a hang on a busy CI machine; measures nothing


# --- a small graph with the assembled model's weight chains ----------------------------------
def _weight_chain(name: str, q: np.ndarray, scale: np.ndarray) -> tuple[list[Any], list[Any]]:
    inits = [numpy_helper.from_array(q, f"{name}_q"), numpy_helper.from_array(scale, f"{name}_scale")]
    nodes = [helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [f"{name}_w"])]
    return nodes, inits


def _small_model(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """x[n, 16] -> MatMul(W1) -> Relu -> MatMul(W2) -> y[n, 8]; int8 weights with per-column scales,
    every column using the full range (its largest |W| is 127), as the assembled MiniLM's do."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in (("w1", (16, 32)), ("w2", (32, 8))):
        q = rng.integers(-127, 128, size=shape).astype(np.int8)
        q[0, :] = 127  # the full range in every column
        weights[name] = q
    scales = {name: rng.uniform(0.001, 0.02, size=(1, q.shape[1])).astype(np.float32) for name, q in weights.items()}
    nodes, inits = [], []
    for name in weights:
        n, i = _weight_chain(name, weights[name], scales[name])
        nodes += n
        inits += i
    nodes += [helper.make_node("MatMul", ["x", "w1_w"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
              helper.make_node("MatMul", ["r", "w2_w"], ["y"])]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return {**weights, **{f"{k}_scale": v for k, v in scales.items()}}


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["y"], {"x": x})[0])


def test_the_variant_name_is_the_model_name_plus_its_suffix() -> None:
    assert VARIANT == f"{MODEL}+int8-activations"
    assert split_variant(VARIANT) == (MODEL, "int8-activations")
    assert split_variant(MODEL) == (MODEL, None) and split_variant("a+b") == ("a+b", None)
    assert parse_embedder_spec(f"fastembed:{VARIANT}@/models/v") == ("fastembed", VARIANT, Path("/models/v"))


def test_conversion_turns_the_weight_products_into_integer_ones_with_the_same_int8_weights(tmp_path: Path) -> None:
    source, out = tmp_path / "fp32.onnx", tmp_path / "int8.onnx"
    _small_model(source)
    assert not has_integer_matmuls(source)
    assert int8_activations.quantise_activations(source, out) == 2
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert ops.count("MatMulInteger") == 2 and "DynamicQuantizeLinear" in ops and "MatMul" not in ops
    assert has_integer_matmuls(out)
    assert int8_activations.integer_weights_match(source, out)  # the stored int8 weights come back as stored
    x = np.random.default_rng(1).normal(size=(64, 16)).astype(np.float32)
    before, after = _run(source, x), _run(out, x)
    cos = (before * after).sum(1) / (np.linalg.norm(before, axis=1) * np.linalg.norm(after, axis=1))
    assert cos.min() > 0.99 and not np.array_equal(before, after)  # close, but activations were rounded


def test_a_graph_without_the_weight_chains_is_refused(tmp_path: Path) -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "no_matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "relu.onnx"))
    with pytest.raises(ModelPullError, match="no integer matrix product"):
        int8_activations.quantise_activations(tmp_path / "relu.onnx", tmp_path / "out.onnx")


def _directory(path: Path, model_file: Path) -> Path:
    """A model directory whose files pass the checks made before loading."""
    path.mkdir()
    shutil.copyfile(model_file, path / "model.onnx")
    for name in OUTPUT_FILES[1:]:
        (path / name).write_text("{}", encoding="utf-8")
    return path


def test_each_name_refuses_the_other_variants_directory_before_loading(tmp_path: Path) -> None:
    _small_model(tmp_path / "fp32.onnx")
    int8_activations.quantise_activations(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")
    fp32_dir, int8_dir = _directory(tmp_path / "fp32", tmp_path / "fp32.onnx"), _directory(tmp_path / "int8", tmp_path / "int8.onnx")
    with pytest.raises(EmbedderUnavailableError, match="holds the int8-activations variant") as exc:
        FastEmbedEmbedder(MODEL, int8_dir)
    assert f"fastembed:{VARIANT}@{int8_dir}" in exc.value.hint
    with pytest.raises(EmbedderUnavailableError, match="holds no integer matrix products"):
        FastEmbedEmbedder(VARIANT, fp32_dir)
    with pytest.raises(EmbedderUnavailableError, match="made locally"):
        FastEmbedEmbedder(VARIANT)  # no hub or cache holds it


def test_convert_refuses_an_incomplete_or_already_integer_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelPullError, match="not a complete model directory"):
        int8_activations.convert(tmp_path, tmp_path / "out")
    _small_model(tmp_path / "fp32.onnx")
    int8_activations.quantise_activations(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")
    with pytest.raises(ModelPullError, match="already holds integer"):
        int8_activations.convert(_directory(tmp_path / "int8", tmp_path / "int8.onnx"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --- the real MiniLM --------------------------------------------------------------------------
SIMILAR = ("Marie Curie won the Nobel Prize in Physics in 1903.", "In 1903 the physics Nobel went to Marie Curie.")
UNRELATED = "The recipe needs two cups of flour and a pinch of salt."
# ours, measured here: the smallest cosine between a text's fp32 and int8-activations vectors was
# 0.9831 over these texts (their 512-token repetition; 0.994 and above for the others) and 0.9935
# over 40 HotpotQA passages (README, Embedders: the whole corpus). 0.975 leaves room for another
# CPU's rounding; a broken conversion lands far below it.
MIN_COSINE = 0.975


def _texts() -> list[str]:
    sentences = [*SIMILAR, UNRELATED, "Paris is the capital of France.", "Kuzu is an embedded graph database.",
                 "The Tidewell Line opened in 1911 and was extended north in 1923."]
    return [" ".join(sentences[j % len(sentences)] for j in range(i * 3 % 17 + 1)) for i in range(30)] + [
        " ".join(sentences * 40), "Short."]


@pytest.fixture(scope="module")
def variant_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CI-built MiniLM, converted once for this module."""
    if not MINILM_DIR:
        pytest.skip("set KGVIZ_TEST_MINILM_DIR to a directory made by scripts/make_minilm_dir.py")
    return int8_activations.convert(Path(MINILM_DIR), tmp_path_factory.mktemp("minilm") / "int8-activations")


@needs_minilm
def test_the_minilm_variant_has_integer_products_and_the_stored_weights(variant_dir: Path) -> None:
    nodes = onnx.load(str(variant_dir / "model.onnx")).graph.node
    assert sum(n.op_type == "MatMulInteger" for n in nodes) == 36  # 6 layers x (q, k, v, out, 2 feed-forward)
    assert int8_activations.integer_weights_match(Path(MINILM_DIR) / "model.onnx", variant_dir / "model.onnx")
    for name in OUTPUT_FILES[1:]:
        assert (variant_dir / name).read_bytes() == (Path(MINILM_DIR) / name).read_bytes()


@needs_minilm
def test_variant_vectors_are_close_to_fp32_under_another_id(variant_dir: Path) -> None:
    fp32, _ = make_embedder(f"fastembed:{MODEL}@{MINILM_DIR}", load_timeout_s=LOAD_S, fallback=False)
    int8, _ = make_embedder(f"fastembed:{VARIANT}@{variant_dir}", load_timeout_s=LOAD_S, fallback=False)
    assert int8.id == f"fastembed:{VARIANT}" != fp32.id and int8.dim == fp32.dim == 384
    texts = _texts()
    a, b = fp32.embed(texts), int8.embed(texts)
    assert b.dtype == np.float32 and np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cosines = (a * b).sum(axis=1)
    assert cosines.min() >= MIN_COSINE, float(cosines.min())
    assert not np.array_equal(a, b)  # another model: why the ids differ
    sims = int8.embed([*SIMILAR, UNRELATED]) @ int8.embed([*SIMILAR, UNRELATED]).T
    assert sims[0, 1] > sims[0, 2] + 0.3


@needs_minilm
@pytest.mark.parametrize("built_with", ["fp32", "int8"])
def test_a_workspace_built_with_one_variant_refuses_the_other(variant_dir: Path, tmp_path: Path, built_with: str) -> None:
    specs = {"fp32": f"fastembed:{MODEL}@{MINILM_DIR}", "int8": f"fastembed:{VARIANT}@{variant_dir}"}
    other = "int8" if built_with == "fp32" else "fp32"
    settings = Settings.from_env({"KGVIZ_HOME": str(tmp_path / "home"), "KGVIZ_EMBEDDER": "hashing"})
    db = tmp_path / "ws"
    with open_workspace(settings, db_dir=db, llm_spec="offline", embedder_spec=specs[built_with]) as ws:
        assert ws.store.embedder_id == ws.embedder.id
    with pytest.raises(EmbedderMismatchError, match=r"\+int8-activations"):
        open_workspace(settings, db_dir=db, llm_spec="offline", embedder_spec=specs[other])


@needs_minilm
def test_models_pull_makes_the_variant_status_lists_it_and_a_workspace_finds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    models = tmp_path / "home" / "models"
    shutil.copytree(MINILM_DIR, pulled_model_dir(models))  # what the registry route leaves

    def no_download(requirements: Sequence[str], folder: Path) -> None:
        raise AssertionError(f"nothing to download: {requirements}")

    env = {"KGVIZ_HOME": str(tmp_path / "home"), "FASTEMBED_CACHE_PATH": str(tmp_path / "empty"), "KGVIZ_EMBEDDER": "auto"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # the model is already there, so neither the hub nor PyPI is asked; only the variant is made
    assert cli.main(["models", "pull", "--int8-activations", "--json"]) == 0
    pulled = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert pulled["route"] == "present" and [(v["route"], v["model"]) for v in pulled["variants"]] == [("converted", VARIANT)]
    made = pull_int8_activations(models, downloader=no_download)
    assert (made.route, made.model) == ("present", VARIANT) and has_integer_matmuls(made.location / "model.onnx")
    assert str(made.location) == pulled["variants"][0]["location"]
    assert local_variants(models) == [(f"fastembed:{VARIANT}@{made.location}", made.location)]
    assert cli.main(["models", "status", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert shown["embedder"] == f"fastembed:{MODEL}"  # auto keeps the fp32 model (README: why)
    assert shown["variants"] == [{"spec": f"fastembed:{VARIANT}@{made.location}", "model_dir": str(made.location)}]
    params = AutoEmbedderParams.from_env(env)
    found = load_recorded(RecordedEmbedder(f"fastembed:{VARIANT}"), AutoEmbedderParams(
        pulled_dir=params.pulled_dir, cache_dir=params.cache_dir, timeout_s=LOAD_S))
    assert found is not None and found.id == f"fastembed:{VARIANT}"


@needs_minilm
def test_the_script_makes_the_variant_beside_an_assembled_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_minilm_dir", Path(__file__).parents[2] / "scripts" / "make_minilm_dir.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    source = tmp_path / "minilm"
    shutil.copytree(MINILM_DIR, source)  # complete: nothing is downloaded
    assert script.main([str(source), "--int8-activations", str(tmp_path / "variant")]) == 0
    out = capsys.readouterr().out
    assert f"fastembed:{VARIANT}@{tmp_path / 'variant'}" in out and has_integer_matmuls(tmp_path / "variant" / "model.onnx")
    assert script.main([str(source), "--int8-activations", str(tmp_path / "variant")]) == 0
    assert "(already converted)" in capsys.readouterr().out


def test_the_model_script_runs_on_a_bare_interpreter() -> None:
    """.ci/run calls scripts/make_minilm_dir.py with the system python3 before `pip install`: the
    script must start with the standard library alone (no numpy, no onnx; ``-S`` leaves out
    site-packages). Only ``--int8-activations`` imports the conversion and what it needs."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "make_minilm_dir.py"
    done = subprocess.run([sys.executable, "-S", str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--int8-activations" in done.stdout
