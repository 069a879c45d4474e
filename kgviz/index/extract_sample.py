"""Calibration on the corpus itself: a few real extraction calls on chunks of the documents to be
built, so the estimate's output tokens and prompt tokens are the model's own, not assumed.

Why (issue 23, measured here): the time of a local build is mostly generation, and how much a
model writes per chunk is the model's, not a constant: qwen2.5-coder-0.5b wrote 1,867 tokens for
four sample chunks where ``BuildParams.expected_output_ratio`` (2 × chunk tokens) expected 1,454.
Two more things the calibration's short calls cannot show:

* **token counts**: the rates are in the server's tokens, the estimate counted kgviz's
  approximate ones; the sample calls give the ratio (server tokens per kgviz token of the prompt);
* **prompt reuse**: llama.cpp keeps the last prompt of a slot and processes only what differs, so
  after the first call of a build only the chunk part of the extraction prompt is processed (the
  system prompt and examples, ~950 of ~1,170 tokens, are not): the second sample call shows how
  many tokens the server skipped (``timings.prompt_n``); a server that does not say skips none.

The calls are made uncached (they time the model) and kept in ``SAMPLE_FILE`` beside the
calibration's speed file; the latest run counts. They are also timed calls of the extraction's own
shape, so they go into the speed measurement (``kgviz.providers.speed``) with the prompt tokens the
server really processed.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from kgviz.ingest import chunk_document
from kgviz.index.params import BuildParams
from kgviz.prompts.extraction import EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS, EXTRACT_TRIPLES_SYSTEM, render_extract_triples
from kgviz.providers.speed import processed_prompt_tokens
from kgviz.text import count_tokens
from kgviz.types import Chunk, Document, Message

SAMPLE_FILE = "extraction_sample.jsonl"
SAMPLE_CHUNKS = 2  # ours: the second call shows prompt reuse; two replies average a model's length a little


@dataclass(frozen=True)
class SampleCall:
    """One timed extraction call on a chunk of the corpus."""

    chunk_tokens: int  # the chunk, kgviz's count (what the estimate multiplies)
    prompt_estimate: int  # the whole prompt, kgviz's count
    input_tokens: int  # the whole prompt, the server's count
    processed_tokens: int  # prompt tokens the server processed (the rest came from its prompt cache)
    output_tokens: int
    seconds: float
    end: float
    prompt_s: float | None


@dataclass(frozen=True)
class ExtractionShape:
    """What the sample calls show about this model on this corpus."""

    output_ratio: float  # output tokens per chunk token (kgviz's count)
    token_scale: float  # server tokens per kgviz token of the prompt
    reused_tokens: int  # prompt tokens the server skipped on a call after the first (0: none seen)
    calls: int
    # the lowest and highest ratio of one call: a sampling model writes more or less for the same
    # chunk from run to run (0.5B on four paragraphs: 1,194 and 1,319 output tokens in two builds)
    output_ratio_low: float = 0.0
    output_ratio_high: float = 0.0

    def describe(self) -> str:
        reuse = (f"the server reused {self.reused_tokens} prompt tokens of each call after the first"
                 if self.reused_tokens else "no prompt reuse seen")
        spread = (f" (one call: {self.output_ratio_low:.2f}–{self.output_ratio_high:.2f})"
                  if self.calls > 1 and self.output_ratio_high > self.output_ratio_low else "")
        return (f"{self.calls} extraction call(s) on the corpus: {self.output_ratio:.2f} output tokens per chunk "
                f"token{spread}, {self.token_scale:.2f} server tokens per counted token, {reuse}")


def pick_chunks(chunks: Sequence[Chunk], k: int = SAMPLE_CHUNKS) -> list[Chunk]:
    """``k`` chunks spread over the lengths (the i-th of k+1 quantiles), deterministic."""
    ordered = sorted(chunks, key=lambda c: (c.n_tokens, c.id))
    if len(ordered) <= k:
        return ordered
    picks = sorted({round((i + 1) * (len(ordered) - 1) / (k + 1)) for i in range(k)})
    return [ordered[i] for i in picks]


def corpus_chunks(documents: Sequence[Document], params: BuildParams) -> list[Chunk]:
    return [c for d in {d.id: d for d in documents}.values()
            for c in chunk_document(d, chunk_tokens=params.chunk_tokens, overlap=params.chunk_overlap)]


def sample_extraction(llm: Any, documents: Sequence[Document], params: BuildParams, cache_dir: Path,
                      *, run: float, k: int = SAMPLE_CHUNKS) -> list[SampleCall]:
    """Run the extraction prompt on ``k`` chunks of ``documents`` (``llm`` uncached) and keep the
    calls in ``SAMPLE_FILE`` under ``run``."""
    system_tokens = count_tokens(EXTRACT_TRIPLES_SYSTEM)
    calls = []
    for chunk in pick_chunks(corpus_chunks(documents, params), k):
        prompt = render_extract_triples(chunk.text)
        c = llm.complete([Message("user", prompt)], system=EXTRACT_TRIPLES_SYSTEM,
                         max_tokens=EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS)
        prompt_s = c.raw.get("prompt_s")
        calls.append(SampleCall(
            chunk.n_tokens, system_tokens + count_tokens(prompt), c.usage.input_tokens, processed_prompt_tokens(c),
            c.usage.output_tokens, c.latency_s, time.time(),
            float(prompt_s) if isinstance(prompt_s, (int, float)) else None))
    path = Path(cache_dir) / SAMPLE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for s in calls:
            f.write(json.dumps({"run": run, "provider": llm.provider, "model": llm.model,
                                "base_url": getattr(llm, "base_url", None), **asdict(s)}) + "\n")
    return calls


def load_sample(cache_dir: Path | None, provider: str, model: str, base_url: str | None) -> list[SampleCall]:
    """The latest run's sample calls to this model (none when never sampled)."""
    path = None if cache_dir is None else Path(cache_dir) / SAMPLE_FILE
    if path is None or not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a truncated line
        if isinstance(row, dict) and (row.get("provider"), row.get("model"), row.get("base_url")) == (provider, model, base_url):
            rows.append(row)
    latest = max((r.get("run", 0) for r in rows), default=0)
    fields = SampleCall.__dataclass_fields__
    out = []
    for r in rows:
        if r.get("run", 0) == latest:
            try:
                out.append(SampleCall(**{k: r[k] for k in fields}))
            except (KeyError, TypeError):
                continue  # a hand-edited line
    return out


def shape(calls: Sequence[SampleCall]) -> ExtractionShape | None:
    """The output ratio, token scale and prompt reuse the sample calls show; None without calls."""
    chunk_tokens = sum(c.chunk_tokens for c in calls)
    counted = sum(c.prompt_estimate for c in calls)
    if not calls or chunk_tokens <= 0 or counted <= 0:
        return None
    reused = [c.input_tokens - c.processed_tokens for c in calls[1:] if c.processed_tokens < c.input_tokens]
    ratios = [c.output_tokens / c.chunk_tokens for c in calls if c.chunk_tokens > 0]
    return ExtractionShape(sum(c.output_tokens for c in calls) / chunk_tokens,
                           sum(c.input_tokens for c in calls) / counted,
                           min(reused) if reused else 0, len(calls), min(ratios), max(ratios))
