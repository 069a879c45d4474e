"""Cost estimate: chunks × (rendered prompt tokens + expected output tokens), priced."""
from __future__ import annotations

import pytest

from tests.support.index_fakes import ScriptedLLM, corpus
from kgviz.index.pipeline import BuildParams, estimate_cost
from kgviz.ingest import chunk_document
from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM, render_extract_triples
from kgviz.providers.offline import OfflineLLM
from kgviz.providers.pricing import PriceTable
from kgviz.text import count_tokens

# the extraction's figures alone: the skeleton's description calls are tests/index/test_estimate_describe.py's
PARAMS = BuildParams(chunk_tokens=24, chunk_overlap=0, expected_output_ratio=1.5, ket_descriptions=False)


def test_estimate_math_matches_the_rendered_prompts() -> None:
    docs = corpus()
    chunks = [c for d in docs for c in chunk_document(d, chunk_tokens=24, overlap=0)]
    prices = PriceTable({("fake", "scripted-1"): (2.0, 10.0)})
    est = estimate_cost(docs + docs[:1], PARAMS, ScriptedLLM(), prices)  # a repeated document counts once
    want_in = sum(count_tokens(EXTRACT_TRIPLES_SYSTEM) + count_tokens(render_extract_triples(c.text)) for c in chunks)
    want_out = sum(round(1.5 * c.n_tokens) for c in chunks)
    assert (est.chunks, est.calls, est.input_tokens, est.output_tokens) == (len(chunks), len(chunks), want_in, want_out)
    assert est.usd == pytest.approx((want_in * 2.0 + want_out * 10.0) / 1e6)
    assert est.model == "fake:scripted-1" and not est.offline and est.price_known


def test_estimate_by_spec_offline_and_unknown_model() -> None:
    docs = corpus()
    off = estimate_cost(docs, PARAMS, "offline")
    assert off.offline and off.usd == 0 and off.input_tokens == 0 and off.chunks > 0
    assert estimate_cost(docs, PARAMS, OfflineLLM()).usd == 0
    unknown = estimate_cost(docs, PARAMS, "openai-compatible:my-llama@http://10.0.0.7:8000/v1", PriceTable({}))
    assert unknown.usd == 0 and not unknown.price_known and unknown.input_tokens > 0 and not unknown.local
    local = estimate_cost(docs, PARAMS, "openai-compatible:my-llama@http://127.0.0.1:9/v1", PriceTable({}))
    assert local.usd == 0 and local.price_known and local.local  # a model on this machine costs nothing
    priced = estimate_cost(docs, PARAMS, "anthropic:claude-haiku-4-5")
    assert priced.usd > 0 and priced.model == "anthropic:claude-haiku-4-5"
