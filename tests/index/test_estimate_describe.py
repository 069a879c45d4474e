"""The build estimate counts the KET skeleton's description calls (Alg. 1 line 3, issue 27): one
call per entity and relationship of each extracted chunk, when ket_descriptions is on."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.support.index_fakes import ScriptedLLM, corpus

from kgviz.index.estimate import estimate_cost, extraction_part
from kgviz.index.estimate_describe import (EXPECTED_OUTPUT_TOKENS, TYPICAL_ITEMS, items_per_chunk,
                                           processed_describe_tokens)
from kgviz.index.extract_sample import ExtractionShape
from kgviz.index.ket_describe import MAX_ENTITIES_PER_CHUNK, MAX_RELATIONSHIPS_PER_CHUNK
from kgviz.index.params import BuildParams
from kgviz.ingest import chunk_document
from kgviz.prompts.ket_describe import DESCRIBE_SKELETON_SYSTEM, render_describe_skeleton
from kgviz.providers.pricing import PriceTable
from kgviz.providers.speed import SPEED_FILE
from kgviz.text import count_tokens

PARAMS = BuildParams(chunk_tokens=60, chunk_overlap=0, expected_output_ratio=1.5)
PRICES = PriceTable({("fake", "scripted-1"): (2.0, 10.0)})
LOCAL = "openai-compatible:qwen@http://127.0.0.1:9/v1"


def _chunks(params: BuildParams = PARAMS) -> list:
    return [c for d in corpus() for c in chunk_document(d, chunk_tokens=params.chunk_tokens, overlap=params.chunk_overlap)]


def test_description_calls_are_counted_in_tokens_calls_and_dollars() -> None:
    on = estimate_cost(corpus(), PARAMS, ScriptedLLM(), PRICES)
    off = estimate_cost(corpus(), replace(PARAMS, ket_descriptions=False), ScriptedLLM(), PRICES)
    assert off.descriptions is None
    d = on.descriptions
    assert d is not None and d.calls > 0
    chunks = _chunks()
    calls = sum(items_per_chunk(c) for c in chunks)
    system = count_tokens(DESCRIBE_SKELETON_SYSTEM)
    prompt = sum(items_per_chunk(c) * round(sum(system + count_tokens(render_describe_skeleton(c.text, k, i))
                                                 for k, i in TYPICAL_ITEMS) / 2) for c in chunks)
    assert (d.calls, d.input_tokens, d.output_tokens) == (calls, prompt, calls * EXPECTED_OUTPUT_TOKENS)
    # the estimate's figures are the extraction's plus the descriptions'
    assert on.calls == off.calls + d.calls and on.input_tokens == off.input_tokens + d.input_tokens
    assert on.output_tokens == off.output_tokens + d.output_tokens
    assert on.usd == pytest.approx(off.usd + (d.input_tokens * 2.0 + d.output_tokens * 10.0) / 1e6) and on.usd > off.usd
    part = extraction_part(on)
    assert replace(part, usd=off.usd) == off and part.usd == pytest.approx(off.usd)


def test_no_description_calls_without_the_ket_index_and_none_sent_offline() -> None:
    assert estimate_cost(corpus(), replace(PARAMS, ket_enabled=False), ScriptedLLM(), PRICES).descriptions is None
    off = estimate_cost(corpus(), PARAMS, "offline")
    assert off.calls == 0 and off.input_tokens == 0 and off.descriptions is not None
    # what an LLM build would send still counts them
    llm = estimate_cost(corpus(), PARAMS, ScriptedLLM(), PRICES)
    assert off.llm_input_tokens == llm.input_tokens and off.llm_output_tokens == llm.output_tokens


def test_items_per_chunk_are_capped_by_the_describe_bounds() -> None:
    big = _chunks(BuildParams(chunk_tokens=2000, chunk_overlap=0))
    long_chunk = max(big, key=lambda c: c.n_tokens)
    assert items_per_chunk(replace(long_chunk, n_tokens=100_000)) == MAX_ENTITIES_PER_CHUNK + MAX_RELATIONSHIPS_PER_CHUNK


def test_a_skeleton_describes_only_its_core_chunks() -> None:
    core = estimate_cost(corpus(), replace(PARAMS, core_fraction=0.5), ScriptedLLM(), PRICES)
    full = estimate_cost(corpus(), PARAMS, ScriptedLLM(), PRICES)
    d = core.descriptions
    assert d is not None and d.full is not None and d.full.calls == full.descriptions.calls  # type: ignore[union-attr]
    assert 0 < d.calls < d.full.calls and d.chunks == core.chunks < core.total_chunks
    assert core.full is not None and core.full.calls == full.calls  # a full KG: every chunk extracted and described


def _speed_file(cache: Path, prompt_tps: float, gen_tps: float) -> None:
    rows = []
    for i, (n_in, n_out) in enumerate(((400, 80), (800, 100))):
        prompt_s = n_in / prompt_tps
        rows.append({"provider": "openai-compatible", "model": "qwen", "base_url": "http://127.0.0.1:9/v1", "run": 1,
                     "input_tokens": n_in, "output_tokens": n_out, "prompt_s": prompt_s,
                     "seconds": prompt_s + n_out / gen_tps, "end": 1000.0 + 100 * i})
    cache.mkdir(parents=True, exist_ok=True)
    (cache / SPEED_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_a_local_model_times_the_description_calls(tmp_path: Path) -> None:
    _speed_file(tmp_path, prompt_tps=100.0, gen_tps=10.0)
    on = estimate_cost(corpus(), replace(PARAMS, workers=1), LOCAL, cache_dir=tmp_path)
    off = estimate_cost(corpus(), replace(PARAMS, workers=1, ket_descriptions=False), LOCAL, cache_dir=tmp_path)
    d = on.descriptions
    assert d is not None and d.seconds is not None and off.seconds is not None and on.seconds is not None
    assert on.usd == 0 and d.usd == 0 and d.local
    want = processed_describe_tokens(_chunks(), None) / 100.0 + d.output_tokens / 10.0
    assert d.seconds == pytest.approx(want)
    assert on.seconds == pytest.approx(off.seconds + d.seconds)
    assert f"with {d.calls:,} skeleton description calls" in on.time_source
    assert extraction_part(on).seconds == pytest.approx(off.seconds)


def test_a_server_that_reuses_prompts_processes_each_chunk_once() -> None:
    chunks = _chunks()
    cached = ExtractionShape(output_ratio=1.0, token_scale=1.0, reused_tokens=50, calls=2)
    uncached = replace(cached, reused_tokens=0)
    n_calls = sum(items_per_chunk(c) for c in chunks)
    assert n_calls > len(chunks)  # several calls per chunk share its text
    assert processed_describe_tokens(chunks, cached) < processed_describe_tokens(chunks, uncached)
    assert processed_describe_tokens(chunks, replace(uncached, token_scale=2.0)) == pytest.approx(
        2 * processed_describe_tokens(chunks, uncached))


def test_the_cli_estimate_names_the_description_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from kgviz.cli import main

    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    doc = tmp_path / "edda.txt"
    doc.write_text(" ".join(d.text for d in corpus()), encoding="utf-8")
    spec = "anthropic:claude-haiku-4-5"
    assert main(["build", str(doc), "--estimate", "--llm", spec, "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    assert est["descriptions"]["calls"] > 0 and est["calls"] == est["chunks"] + est["descriptions"]["calls"]
    assert main(["build", str(doc), "--estimate", "--llm", spec]) == 0
    text = capsys.readouterr().out
    assert f"of which KET skeleton descriptions (Alg. 1 line 3, --no-ket-descriptions to skip): " \
           f"{est['descriptions']['calls']:,} calls" in text
    assert main(["build", str(doc), "--estimate", "--llm", spec, "--no-ket-descriptions", "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert off["descriptions"] is None and off["calls"] == off["chunks"]
