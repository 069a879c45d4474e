"""What an extraction would cost before running it: chunks × (prompt tokens + expected output
tokens), priced with the editable PriceTable. Token counts use kgviz's approximate tokenizer
(kgviz.text), so the figure is an estimate; the build reports the providers' real counts."""
from __future__ import annotations

from typing import Sequence

from kgviz.config import resolve_llm_spec
from kgviz.index.params import BuildParams, CostEstimate
from kgviz.ingest import chunk_document
from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM, render_extract_triples
from kgviz.providers.base import LLM
from kgviz.providers.factory import parse_llm_spec
from kgviz.providers.pricing import PriceTable
from kgviz.tasks.extraction import MAX_OUTPUT_TOKENS
from kgviz.text import count_tokens
from kgviz.types import Document


def _provider_model(llm: str | LLM) -> tuple[str, str, bool]:
    if isinstance(llm, str):
        kind, model, _ = parse_llm_spec(resolve_llm_spec(llm))
        return kind, model, kind == "offline"
    return llm.provider, llm.model, bool(llm.is_offline)


def estimate_cost(
    documents: Sequence[Document],
    params: BuildParams | None,
    llm: str | LLM,
    prices: PriceTable | None = None,
) -> CostEstimate:
    """Estimate the extraction stage for ``documents`` with ``llm`` (a spec such as
    "anthropic:claude-haiku-4-5", or an LLM object). Offline costs nothing."""
    params = params or BuildParams()
    provider, model, offline = _provider_model(llm)
    chunks = [
        c for d in {d.id: d for d in documents}.values()
        for c in chunk_document(d, chunk_tokens=params.chunk_tokens, overlap=params.chunk_overlap)
    ]
    if offline:
        return CostEstimate(len(chunks), 0, 0, 0.0, 0, "offline", True)
    system_tokens = count_tokens(EXTRACT_TRIPLES_SYSTEM)
    input_tokens = sum(system_tokens + count_tokens(render_extract_triples(c.text)) for c in chunks)
    output_tokens = sum(min(MAX_OUTPUT_TOKENS, round(params.expected_output_ratio * c.n_tokens)) for c in chunks)
    table = prices if prices is not None else PriceTable()
    usd = table.cost(provider, model, input_tokens, output_tokens)
    return CostEstimate(
        len(chunks), input_tokens, output_tokens, usd, len(chunks), f"{provider}:{model}", False,
        price_known=table.known(provider, model),
    )
