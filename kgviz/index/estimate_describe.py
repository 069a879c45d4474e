"""What the KET skeleton's description calls would cost (KET-RAG Alg. 1 line 3,
``kgviz.index.ket_describe``): one call per entity and relationship of each extracted chunk, made
after the extraction whenever ``BuildParams.ket_descriptions`` and ``ket_enabled`` are on and the
model is an LLM.

How many items a chunk has is known only once it is extracted, so the estimate (ours) counts them
from the chunk's length, at the rate the recorded sample showed, capped by the per-chunk bounds of
``ket_describe``:

  items(chunk) = min(MAX_ENTITIES + MAX_RELATIONSHIPS, round(ITEMS_PER_CHUNK_TOKEN × chunk tokens))
  prompt(call) = system + DESCRIBE_SKELETON(chunk, a typical item)   (kgviz's token count)
  output(call) = EXPECTED_OUTPUT_TOKENS                             (the recorded mean, ≤ the cap)

Time (local models) follows the server's prompt cache: the calls of one chunk share the chunk as
their prefix, so a server that reuses prompts (the extraction sample saw it,
``ExtractionShape.reused_tokens``) processes the chunk once and then only each item's tail.
"""
from __future__ import annotations

from typing import Sequence

from kgviz.index.extract_sample import ExtractionShape
from kgviz.index.ket_describe import MAX_ENTITIES_PER_CHUNK, MAX_RELATIONSHIPS_PER_CHUNK
from kgviz.index.params import CostEstimate
from kgviz.prompts.extraction import chunk_text_for_prompt
from kgviz.prompts.ket_describe import (DESCRIBE_SKELETON_MAX_OUTPUT_TOKENS, DESCRIBE_SKELETON_SYSTEM,
                                        render_describe_skeleton)
from kgviz.providers.pricing import PriceTable
from kgviz.text import count_tokens
from kgviz.types import Chunk

# ours, measured on the recorded sample: the graph qwen2.5-coder-1.5b's extraction builds asks 263
# items of its 15 chunks (2,826 chunk tokens, at most 12 + 12 a chunk), and qwen2.5-coder-0.5b's 54
# recorded description replies (sample_recorded/describe.*.jsonl) average 51.3 output tokens
ITEMS_PER_CHUNK_TOKEN = 0.0931  # items asked per chunk token (kgviz's count)
EXPECTED_OUTPUT_TOKENS = 51  # mean output tokens of a description call
# what a prompt names as its item: a two-word name, a short triple (ours: typical of the sample)
TYPICAL_ITEMS = (("entity", "Edda Lunn"), ("relationship", "Edda Lunn | designed | the Orrin Bridge"))


def items_per_chunk(chunk: Chunk) -> int:
    return min(MAX_ENTITIES_PER_CHUNK + MAX_RELATIONSHIPS_PER_CHUNK, round(ITEMS_PER_CHUNK_TOKEN * chunk.n_tokens))


def _prompt_tokens(chunk: Chunk) -> tuple[int, int]:
    """(a call's prompt tokens, the part of it after the chunk's shared prefix), the mean over
    the two kinds of item."""
    system = count_tokens(DESCRIBE_SKELETON_SYSTEM)
    prefix = count_tokens("Text:\n" + chunk_text_for_prompt(chunk.text))
    whole = [system + count_tokens(render_describe_skeleton(chunk.text, kind, item)) for kind, item in TYPICAL_ITEMS]
    mean = round(sum(whole) / len(whole))
    return mean, max(0, mean - system - prefix)


def describe_estimate(chunks: Sequence[Chunk], provider: str, model: str, offline: bool,
                      prices: PriceTable | None) -> CostEstimate:
    """The description calls for the extracted ``chunks``. Offline nothing is sent (0 calls); the
    ``llm_*`` tokens still say what an LLM build would use."""
    calls = sum(items_per_chunk(c) for c in chunks)
    input_tokens = sum(items_per_chunk(c) * _prompt_tokens(c)[0] for c in chunks)
    output_tokens = calls * min(EXPECTED_OUTPUT_TOKENS, DESCRIBE_SKELETON_MAX_OUTPUT_TOKENS)
    if offline:
        return CostEstimate(len(chunks), 0, 0, 0.0, 0, "offline", True, total_chunks=len(chunks),
                            llm_input_tokens=input_tokens, llm_output_tokens=output_tokens)
    table = prices if prices is not None else PriceTable()
    return CostEstimate(len(chunks), input_tokens, output_tokens, table.cost(provider, model, input_tokens, output_tokens),
                        calls, f"{provider}:{model}", False, price_known=table.known(provider, model),
                        total_chunks=len(chunks), llm_input_tokens=input_tokens, llm_output_tokens=output_tokens)


def processed_describe_tokens(chunks: Sequence[Chunk], sample: ExtractionShape | None) -> float:
    """The prompt tokens the server will process for the description calls, in its own tokens:
    with a prompt cache seen (``sample.reused_tokens``), each chunk's prefix once and then only
    each call's tail; without one, every call's whole prompt."""
    scale = sample.token_scale if sample is not None else 1.0
    reuses = sample is not None and sample.reused_tokens > 0
    total = 0.0
    for c in chunks:
        n = items_per_chunk(c)
        if n == 0:
            continue
        whole, tail = _prompt_tokens(c)
        total += whole + (n - 1) * (tail if reuses else whole)
    return total * scale
