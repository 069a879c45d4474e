"""The int8-activations variant of a fastembed model directory: its matrix products in integers.

The all-MiniLM-L6-v2 that kgviz assembles (``model_pull``) stores its weights as int8 with one
scale per output column, but computes in fp32: every weight goes ``Cast(int8) -> Mul(scale) ->
MatMul``, so onnxruntime widens the weights once when the session loads and each passage then
costs ~2.8 GFLOP of fp32 matrix products. This module writes a variant whose weight products run
as ``DynamicQuantizeLinear(x) -> MatMulInteger(x_u8, w_s8)`` (u8 x s8, what AVX-512 VNNI and AVX-VNNI
compute in one instruction per 4 products):

1. ``fold_weight_scales``: each ``MatMul`` whose weight is ``Mul(Cast(int8 W), scale)`` of constants
   gets the fp32 product ``W * scale`` as a plain initializer (the nodes and constants only that
   chain used are dropped);
2. onnxruntime's own ``quantize_dynamic`` (MatMul only, per-channel symmetric s8 weights, full
   8-bit range) turns those MatMuls into integer ones, quantising each activation at run time.
   Every column of the model's int8 weights uses the full range (its largest |W| is 127), so
   step 2's per-column scale is the stored one and the int8 weights come back as stored
   (``integer_weights_match`` checks it); what changes is the activations, now rounded to 8 bits
   per call, so the vectors differ from the fp32 model's beyond float noise (README, Embedders).

The attention products (activations x activations) stay fp32. The ``int8-fused`` variant
(``variant=INT8_FUSED``) also rewrites the folded graph before step 2 (step 1b,
``kgviz.providers.encoder_fusion``): each layer's attention into one MultiHeadAttention node, GELU
into one Gelu node, and the residual sums apart from their layer norms; the integer products are
those of step 2 all the same. ``convert`` copies the tokenizer
files beside the new ``model.onnx``. It needs the ``onnx`` package (the ``int8`` extra), imported
only here; loading the variant needs nothing beyond fastembed. A directory's variant is read from
its graph (``has_integer_matmuls``), not from its name, so the fp32 id can never be given to
integer vectors (``kgviz.providers.embedders``).
"""
from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from kgviz.errors import ModelPullError
from kgviz.provider_specs import INT8_ACTIVATIONS, INT8_FUSED, VARIANTS
from kgviz.providers.embedders import has_integer_matmuls
from kgviz.providers.encoder_fusion import drop_unused, fuse_attention, fuse_gelu, keep_layer_norms_apart
from kgviz.providers.model_places import OUTPUT_FILES, TOKENIZER_FILES, is_complete

MODEL_FILE = "model.onnx"


def require_onnx(variant: str = INT8_ACTIVATIONS) -> Any:
    """The ``onnx`` module (the ``int8`` extra), which making either variant needs; ModelPullError
    naming the ``variant`` being made when it is not installed."""
    try:
        import onnx
    except ImportError:
        raise ModelPullError(
            f"making the {variant} variant needs the onnx package, which is not installed",
            hint="pip install 'kgviz[int8]' (or onnx==1.23.2)",
        ) from None
    return onnx


def fold_weight_scales(model: Any) -> int:
    """Replace each MatMul weight ``Mul(Cast(int8 W), scale)`` (W and scale initializers) by the
    fp32 initializer ``W * scale``, in place; drop the nodes and initializers no longer used.
    Returns how many MatMuls were given a folded weight."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    graph = model.graph
    constants = {init.name: init for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    folded = 0
    for node in graph.node:
        if node.op_type != "MatMul" or len(node.input) != 2:
            continue
        mul = producer.get(node.input[1])
        if mul is None or mul.op_type != "Mul":
            continue
        casts = [producer.get(i) for i in mul.input]
        pairs = [(c, s) for c, s in ((casts[0], mul.input[1]), (casts[1], mul.input[0]))
                 if c is not None and c.op_type == "Cast" and s in constants]
        if not pairs:
            continue
        cast, scale_name = pairs[0]
        weight = constants.get(cast.input[0])
        if weight is None or weight.data_type != TensorProto.INT8:
            continue
        q = numpy_helper.to_array(weight).astype(np.float32)
        scale = numpy_helper.to_array(constants[scale_name]).astype(np.float32)
        name = f"{weight.name}_folded"
        if name not in constants:
            constants[name] = numpy_helper.from_array((q * scale).astype(np.float32), name)
            graph.initializer.append(constants[name])
        node.input[1] = name
        folded += 1
    drop_unused(graph)
    return folded


class _Unless(logging.Filter):
    """Drops the log records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def fuse_encoder(model: Any, num_heads: int) -> dict[str, int]:
    """Step 1b (the int8-fused variant): the encoder blocks rewritten into fused kernels, in
    place. Every attention block and every GELU must be rewritten (one of each per layer), else
    ModelPullError: a half-fused graph would be neither variant. Returns the counts."""
    layers = sum(node.op_type == "Softmax" for node in model.graph.node)
    counts = {"attention": fuse_attention(model, num_heads), "gelu": fuse_gelu(model),
              "layer norms apart": keep_layer_norms_apart(model)}
    if layers == 0 or counts["attention"] != layers or counts["gelu"] != layers:
        raise ModelPullError(f"fusing the encoder rewrote {counts['attention']} attention blocks and {counts['gelu']} "
                             f"GELUs of {layers} layers: not a graph the {INT8_FUSED} variant fits")
    return counts


def quantise_activations(source: Path, out: Path, variant: str = INT8_ACTIVATIONS, num_heads: int = 0) -> int:
    """Write ``source``'s model with folded weight scales and integer MatMuls to ``out`` (for
    INT8_FUSED, with the encoder fused too, ``num_heads`` attention heads per layer).
    Returns the number of MatMulInteger nodes; ModelPullError when there is none."""
    if variant not in VARIANTS:
        raise ModelPullError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
    onnx = require_onnx(variant)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(source))
    fold_weight_scales(model)
    if variant == INT8_FUSED:
        if num_heads < 1:
            raise ModelPullError(f"the {INT8_FUSED} variant needs the model's number of attention heads")
        fuse_encoder(model, num_heads)
    advice = _Unless("pre-processing before quantization")  # the shape pass it suggests changes no MatMul here
    logging.getLogger().addFilter(advice)
    try:
        # the fused nodes' outputs have no inferred type (a contrib domain): they are float tensors
        extra = {"DefaultTensorType": onnx.TensorProto.FLOAT} if variant == INT8_FUSED else {}
        quantize_dynamic(model, str(out), op_types_to_quantize=["MatMul"], per_channel=True,
                         reduce_range=False, weight_type=QuantType.QInt8, extra_options=extra)
    finally:
        logging.getLogger().removeFilter(advice)
    count = sum(node.op_type == "MatMulInteger" for node in onnx.load(str(out)).graph.node)
    if count == 0:
        raise ModelPullError(f"quantising {source} produced no integer matrix product: not a model this variant fits")
    return count


def integer_weights_match(source: Path, variant: Path) -> bool:
    """Whether every int8 weight of ``source`` feeding a MatMul reappears, unchanged, among the
    variant's int8 weights (step 2 re-derived each column's scale from the folded weights)."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    onnx = require_onnx()

    def int8_weights(path: Path) -> list[Any]:
        return [numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer
                if i.data_type == TensorProto.INT8 and len(i.dims) == 2]

    after = int8_weights(variant)
    before = [w for w in int8_weights(source) if any(w.shape == a.shape for a in after)]
    return bool(before) and all(any(w.shape == a.shape and np.array_equal(w, a) for a in after) for w in before)


def attention_heads(source_dir: Path) -> int:
    """``num_attention_heads`` of the model directory's config.json (a BERT config)."""
    try:
        heads = json.loads((source_dir / "config.json").read_text(encoding="utf-8"))["num_attention_heads"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelPullError(f"{source_dir / 'config.json'} gives no num_attention_heads ({exc})") from None
    if not isinstance(heads, int) or heads < 1:
        raise ModelPullError(f"{source_dir / 'config.json'} gives num_attention_heads={heads!r}")
    return heads


def convert(source_dir: Path, out: Path, variant: str = INT8_ACTIVATIONS) -> Path:
    """Write the ``variant`` (int8-activations or int8-fused) of the model directory ``source_dir``
    (a complete MiniLM directory, ``model_places.is_complete``) into ``out``, replacing what is
    there. Written under a temporary name and renamed at the end, so an interrupted conversion
    leaves nothing that would load."""
    if not is_complete(source_dir):
        raise ModelPullError(f"{source_dir} is not a complete model directory (needs {', '.join(OUTPUT_FILES)})")
    if has_integer_matmuls(source_dir / MODEL_FILE):
        raise ModelPullError(f"{source_dir} already holds integer matrix products: convert the fp32 model")
    heads = attention_heads(source_dir) if variant == INT8_FUSED else 0
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        staging.chmod(0o755)
        quantise_activations(source_dir / MODEL_FILE, staging / MODEL_FILE, variant, heads)
        for name in TOKENIZER_FILES:
            shutil.copyfile(source_dir / name, staging / name)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out
