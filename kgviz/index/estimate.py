"""What an extraction would cost before running it: chunks × (prompt tokens + expected output
tokens), priced with the editable PriceTable. Token counts use kgviz's approximate tokenizer
(kgviz.text), so the figure is an estimate; the build reports the providers' real counts.

KET-RAG (BuildParams.ket_enabled with core_fraction β < 1) extracts only the ⌈β·n⌉ core chunks
(paper 004, Algorithm 3 line 9). Which chunks those are depends on the KNN graph's PageRank, known
only once the chunks are embedded, so the estimate scales the full figure by ⌈β·n⌉/n (the mean
chunk; ours) and also returns the full-KG figure in ``CostEstimate.full`` for comparison.

Local models (an ``openai-compatible`` server on a loopback address: llama.cpp, Ollama, LM
Studio) cost $0, and their *time* is what matters: prompt tokens / prompt rate + output tokens /
generation rate, divided by the parallel speed-up, all measured (``kgviz.providers.speed``: a
calibration the user ran, else this workspace's earlier calls to the model). Never a made-up
rate: without a measurement the time is None and ``time_source`` says how to measure it. The
estimate also carries the range the measured calls allow (``seconds_low`` .. ``seconds_high``:
the fastest and the slowest call's rates), and ``time_source`` says whether two calls agreed.

With an LLM and the KET skeleton's descriptions on (``BuildParams.ket_descriptions``, Alg. 1 line
3), the build makes one more call per entity and relationship of each extracted chunk
(``kgviz.index.estimate_describe``): the figures above count them too (tokens, calls, $, seconds),
and ``CostEstimate.descriptions`` holds their share. They go through the interactive API, also in
a batch build."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence

from kgviz.config import Settings, resolve_llm_spec
from kgviz.errors import ConfigError, ProviderError
from kgviz.index.estimate_describe import describe_estimate, processed_describe_tokens
from kgviz.index.extract_sample import ExtractionShape, load_sample, sample_extraction, shape
from kgviz.index.ket import n_core
from kgviz.index.params import BuildParams, CostEstimate
from kgviz.ingest import chunk_document
from kgviz.prompts.extraction import EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS, EXTRACT_TRIPLES_SYSTEM, render_extract_triples
from kgviz.providers.base import LLM
from kgviz.providers.batch_api import BATCH_PRICE_FACTOR, BATCH_PROVIDERS
from kgviz.providers.factory import is_loopback, parse_llm_spec
from kgviz.providers.pricing import PriceTable
from kgviz.providers.speed import LocalSpeed, calibrate, load_speed
from kgviz.text import count_tokens
from kgviz.types import Chunk, Document


UNKNOWN_TIME = ("unknown until measured: run `kgviz build --estimate --calibrate` (or press Calibrate on the "
                "Build page), or build a few chunks with this model first")


def _provider_model(llm: str | LLM) -> tuple[str, str, bool, str | None]:
    if isinstance(llm, str):
        kind, model, base_url = parse_llm_spec(resolve_llm_spec(llm))
        return kind, model, kind == "offline", base_url
    return llm.provider, llm.model, bool(llm.is_offline), getattr(llm, "base_url", None)


def is_local(provider: str, base_url: str | None) -> bool:
    """A model served on this machine: it costs nothing per token, only time."""
    return provider == "openai-compatible" and is_loopback(base_url)


def processed_prompt_tokens(est: CostEstimate, sample: ExtractionShape | None, *, first_reused: bool = False) -> float:
    """The prompt tokens the server will process for ``est``, in its own tokens: kgviz's count
    scaled by the measured ratio, less the part of each call after the first that the server's
    prompt cache skips (both measured by the sample calls; without them, kgviz's count).
    ``first_reused``: the first call's too, as when the server still holds the extraction prompt
    from an earlier call (a build right after its calibration: the range's fast end)."""
    if sample is None or est.calls <= 0:
        return float(est.input_tokens)
    tokens = est.input_tokens * sample.token_scale
    reused = min(float(sample.reused_tokens), tokens / est.calls)  # never more than a call's prompt
    return tokens - (est.calls - (0 if first_reused else 1)) * reused


def _with_time(est: CostEstimate, speed: LocalSpeed | None, workers: int,
               sample: ExtractionShape | None = None,
               output_span: tuple[int, int] | None = None) -> CostEstimate:
    """``output_span``: the fewest and most output tokens the sample calls allow (the range then
    spans the rates, the output length and, at its fast end, a first call whose prompt the server
    still holds)."""
    full = est.full and _with_time(est.full, speed, workers, sample)
    if speed is None:
        return replace(est, local=True, usd=0.0, price_known=True, time_source=UNKNOWN_TIME, full=full)
    par = speed.effective_parallelism(workers)
    prompt = processed_prompt_tokens(est, sample)
    seconds = speed.call_seconds(prompt, est.output_tokens) / par
    out_low, out_high = output_span or (est.output_tokens, est.output_tokens)
    fast = speed.call_seconds_range(processed_prompt_tokens(est, sample, first_reused=True),
                                    min(out_low, est.output_tokens))
    slow = speed.call_seconds_range(prompt, max(out_high, est.output_tokens))
    low, high = (fast[0] / par, slow[1] / par) if fast is not None and slow is not None else (None, None)
    source = speed.describe(workers) + (f"; {sample.describe()}" if sample is not None else "")
    return replace(est, local=True, usd=0.0, price_known=True, seconds=seconds, seconds_low=low, seconds_high=high,
                   time_source=source, full=full)


def estimate_cost(
    documents: Sequence[Document],
    params: BuildParams | None,
    llm: str | LLM,
    prices: PriceTable | None = None,
    *,
    cache_dir: Path | None = None,
) -> CostEstimate:
    """Estimate the extraction stage for ``documents`` with ``llm`` (a spec such as
    "anthropic:claude-haiku-4-5", or an LLM object). Offline costs nothing and sends no tokens;
    ``llm_input_tokens`` / ``llm_output_tokens`` still say what an LLM extraction would use.
    A local model costs $0; its time comes from the speed measured under ``cache_dir`` (the
    workspace's LLM cache folder) with ``params.workers`` workers."""
    params = params or BuildParams()
    provider, model, offline, base_url = _provider_model(llm)
    est = _estimate(documents, params, provider, model, offline, prices)
    desc = _descriptions(documents, params, provider, model, offline, prices)
    if not offline and provider in BATCH_PROVIDERS and est.price_known:
        est = replace(est, batch_usd=BATCH_PRICE_FACTOR * est.usd)
    if offline or not is_local(provider, base_url):
        return with_descriptions(est, desc)
    sample = shape(load_sample(cache_dir, provider, model, base_url))
    span = None
    if sample is not None:  # the model's own output length on this corpus, measured
        def at(ratio: float) -> CostEstimate:
            return _estimate(documents, replace(params, expected_output_ratio=ratio), provider, model, offline, prices)
        est = at(sample.output_ratio)
        if sample.output_ratio_high > sample.output_ratio_low:
            span = (at(sample.output_ratio_low).output_tokens, at(sample.output_ratio_high).output_tokens)
    speed = load_speed(cache_dir, provider, model, base_url)
    est = _with_time(est, speed, params.workers, sample, span)
    if desc is not None:
        desc = _describe_time(desc, _chunks(documents, params), speed, params.workers, sample)
    return with_descriptions(est, desc)


def _chunks(documents: Sequence[Document], params: BuildParams) -> list[Chunk]:
    return [c for d in {d.id: d for d in documents}.values()
            for c in chunk_document(d, chunk_tokens=params.chunk_tokens, overlap=params.chunk_overlap)]


def _descriptions(documents: Sequence[Document], params: BuildParams, provider: str, model: str, offline: bool,
                  prices: PriceTable | None) -> CostEstimate | None:
    """The skeleton's description calls (KET Alg. 1 line 3), or None when the build makes none.
    With β < 1 only the core chunks are described: the full figure scaled by ⌈β·n⌉/n, as the
    extraction's (the mean chunk), the β = 1 figure in ``full``."""
    if not (params.ket_enabled and params.ket_descriptions):
        return None
    chunks = _chunks(documents, params)
    full = describe_estimate(chunks, provider, model, offline, prices)
    n = len(chunks)
    k = n_core(n, params.core_fraction)
    if k == n or n == 0:
        return full
    f = k / n
    return replace(full, chunks=k, input_tokens=round(full.input_tokens * f), output_tokens=round(full.output_tokens * f),
                   usd=full.usd * f, calls=round(full.calls * f), llm_input_tokens=round(full.llm_input_tokens * f),
                   llm_output_tokens=round(full.llm_output_tokens * f), beta=params.core_fraction, full=full)


def _describe_time(desc: CostEstimate, chunks: Sequence[Chunk], speed: LocalSpeed | None, workers: int,
                   sample: ExtractionShape | None) -> CostEstimate:
    """The description calls' time from the measured rates: their prompts as the server processes
    them (a chunk's prefix once where it caches prompts), their output tokens."""
    full = desc.full and _describe_time(desc.full, chunks, speed, workers, sample)
    if speed is None:
        return replace(desc, local=True, usd=0.0, price_known=True, time_source=UNKNOWN_TIME, full=full)
    share = desc.calls / desc.full.calls if desc.full is not None and desc.full.calls else 1.0
    prompt = processed_describe_tokens(chunks, sample) * share
    par = speed.effective_parallelism(workers)
    span = speed.call_seconds_range(prompt, desc.output_tokens)
    low, high = (span[0] / par, span[1] / par) if span is not None else (None, None)
    return replace(desc, local=True, usd=0.0, price_known=True, seconds=speed.call_seconds(prompt, desc.output_tokens) / par,
                   seconds_low=low, seconds_high=high, time_source=speed.describe(workers), full=full)


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def with_descriptions(est: CostEstimate, desc: CostEstimate | None) -> CostEstimate:
    """``est`` (the extraction) with the description calls counted in its figures and kept in
    ``descriptions``; ``est`` unchanged when there are none."""
    if desc is None:
        return est
    full = est.full
    if full is not None:
        full = with_descriptions(full, desc.full or desc)
    seconds = _plus(est.seconds, desc.seconds)
    source = est.time_source
    if seconds is not None and desc.calls:
        source += f"; with {desc.calls:,} skeleton description calls (KET Alg. 1 line 3, {format_duration(desc.seconds or 0)})"
    return replace(
        est, input_tokens=est.input_tokens + desc.input_tokens, output_tokens=est.output_tokens + desc.output_tokens,
        usd=est.usd + desc.usd, calls=est.calls + desc.calls, price_known=est.price_known and desc.price_known,
        llm_input_tokens=est.llm_input_tokens + desc.llm_input_tokens,
        llm_output_tokens=est.llm_output_tokens + desc.llm_output_tokens,
        seconds=seconds, seconds_low=_plus(est.seconds_low, desc.seconds_low),
        seconds_high=_plus(est.seconds_high, desc.seconds_high),
        batch_usd=None if est.batch_usd is None else est.batch_usd + desc.usd,  # descriptions: interactive calls
        time_source=source, full=full, descriptions=desc)


def extraction_part(est: CostEstimate) -> CostEstimate:
    """The extraction's share of ``est`` (without the description calls): what the build's
    "extract" stage is measured against."""
    d = est.descriptions
    if d is None:
        return est
    return replace(est, input_tokens=est.input_tokens - d.input_tokens, output_tokens=est.output_tokens - d.output_tokens,
                   usd=est.usd - d.usd, calls=est.calls - d.calls,
                   llm_input_tokens=est.llm_input_tokens - d.llm_input_tokens,
                   llm_output_tokens=est.llm_output_tokens - d.llm_output_tokens,
                   seconds=None if est.seconds is None or d.seconds is None else est.seconds - d.seconds,
                   seconds_low=None if est.seconds_low is None or d.seconds_low is None else est.seconds_low - d.seconds_low,
                   seconds_high=None if est.seconds_high is None or d.seconds_high is None
                   else est.seconds_high - d.seconds_high,
                   batch_usd=None if est.batch_usd is None else est.batch_usd - d.usd,
                   full=est.full and extraction_part(est.full), descriptions=None)


def _estimate(
    documents: Sequence[Document], params: BuildParams, provider: str, model: str, offline: bool,
    prices: PriceTable | None,
) -> CostEstimate:
    chunks = _chunks(documents, params)
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


def calibrate_spec(spec: str, settings: Settings, *, workers: int, documents: Sequence[Document] = (),
                   params: BuildParams | None = None,
                   on_sample_call: Callable[[int, int], None] | None = None) -> LocalSpeed:
    """Time a few short calls to the local model ``spec`` (uncached) and keep them, so the next
    estimate has measured rates; with ``documents``, also the extraction itself on a few of their
    chunks (``kgviz.index.extract_sample``: the model's output length, the server's token count
    and prompt reuse; ``on_sample_call(done, most)`` after each of those calls, for progress). Only
    for local models: a hosted API is priced, not timed."""
    from kgviz.providers.factory import make_llm
    from kgviz.providers.speed import TimedCall

    kind, model, base_url = parse_llm_spec(resolve_llm_spec(spec))
    if not is_local(kind, base_url):
        raise ConfigError(f"calibration times a local model; {kind}:{model} is not one",
                          hint="use an openai-compatible:<model>@http://127.0.0.1:<port>/v1 spec (llama.cpp, Ollama)")
    llm = make_llm(spec, settings, use_cache=False)

    def on_corpus(run: float) -> list[TimedCall]:
        calls = sample_extraction(llm, documents, params or BuildParams(), settings.cache_dir, run=run,
                                  on_call=on_sample_call)
        # timed calls of the build's own shape: the prompt tokens are those the server processed
        return [TimedCall(c.processed_tokens, c.output_tokens, c.seconds, c.end, c.prompt_s, source="calibration")
                for c in calls]

    speed = calibrate(llm, settings.cache_dir, workers=workers, more=on_corpus if documents else None)
    if speed is None:
        raise ProviderError(f"the calibration calls to {kind}:{model} did not show a speed (no tokens or no time)",
                            hint="check that the server reports token usage, then calibrate again")
    return speed


def describe_time(est: CostEstimate) -> str:
    """One line: the estimated time, the range the measured calls allow, and where it comes from."""
    if est.seconds is None:
        return est.time_source
    return f"{format_duration(est.seconds)}{range_text(est)} ({est.time_source})"


def range_text(est: CostEstimate) -> str:
    """", between ~2 min and ~4 min" when the calls' rates give a range, else ""."""
    if est.seconds_low is None or est.seconds_high is None:
        return ""
    return f", between {format_duration(est.seconds_low)} and {format_duration(est.seconds_high)}"


def format_duration(seconds: float) -> str:
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 5400:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.1f} h"
