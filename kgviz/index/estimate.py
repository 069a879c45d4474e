"""What an extraction would cost before running it: chunks × (prompt tokens + expected output
tokens), priced with the editable PriceTable. Token counts use kgviz's approximate tokenizer
(kgviz.text), so the figure is an estimate; the build reports the providers' real counts.

KET-RAG (BuildParams.ket_enabled with core_fraction β < 1) extracts only the ⌈β·n⌉ core chunks
(paper 004, Algorithm 3 line 9). Which chunks those are depends on the KNN graph's PageRank, known
only once the chunks are embedded, so the estimate scales the full figure by ⌈β·n⌉/n (the mean
chunk; ours) and also returns the full-KG figure in ``CostEstimate.full`` for comparison."""
from __future__ import annotations

from typing import Sequence

from kgviz.config import resolve_llm_spec
from kgviz.index.ket import n_core
from kgviz.index.params import BuildParams, CostEstimate
from kgviz.ingest import chunk_document
from kgviz.prompts.extraction import EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS, EXTRACT_TRIPLES_SYSTEM, render_extract_triples
from kgviz.providers.base import LLM
from kgviz.providers.factory import parse_llm_spec
from kgviz.providers.pricing import PriceTable
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
    "anthropic:claude-haiku-4-5", or an LLM object). Offline costs nothing and sends no tokens;
    ``llm_input_tokens`` / ``llm_output_tokens`` still say what an LLM extraction would use."""
    params = params or BuildParams()
    provider, model, offline = _provider_model(llm)
    chunks = [
        c for d in {d.id: d for d in documents}.values()
        for c in chunk_document(d, chunk_tokens=params.chunk_tokens, overlap=params.chunk_overlap)
    ]
    n = len(chunks)
    k = n_core(n, params.core_fraction) if params.ket_enabled else n
    beta = params.core_fraction if params.ket_enabled else 1.0
    system_tokens = count_tokens(EXTRACT_TRIPLES_SYSTEM)
    input_tokens = sum(system_tokens + count_tokens(render_extract_triples(c.text)) for c in chunks)
    output_tokens = sum(min(EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS, round(params.expected_output_ratio * c.n_tokens)) for c in chunks)
    si, so = (input_tokens, output_tokens) if k == n else (round(input_tokens * k / n), round(output_tokens * k / n))
    if offline:  # nothing is sent, but the LLM figure says what building with one would take
        full = CostEstimate(n, 0, 0, 0.0, 0, "offline", True, total_chunks=n,
                            llm_input_tokens=input_tokens, llm_output_tokens=output_tokens)
        return CostEstimate(k, 0, 0, 0.0, 0, "offline", True, beta=beta, total_chunks=n, full=full if k < n else None,
                            llm_input_tokens=si, llm_output_tokens=so)
    table = prices if prices is not None else PriceTable()
    name, known = f"{provider}:{model}", table.known(provider, model)
    full = CostEstimate(n, input_tokens, output_tokens, table.cost(provider, model, input_tokens, output_tokens), n,
                        name, False, price_known=known, total_chunks=n,
                        llm_input_tokens=input_tokens, llm_output_tokens=output_tokens)
    if k == n:
        return CostEstimate(n, input_tokens, output_tokens, full.usd, n, name, False, price_known=known,
                            beta=beta, total_chunks=n, llm_input_tokens=input_tokens, llm_output_tokens=output_tokens)
    return CostEstimate(k, si, so, table.cost(provider, model, si, so), k, name, False, price_known=known,
                        beta=beta, total_chunks=n, full=full, llm_input_tokens=si, llm_output_tokens=so)
