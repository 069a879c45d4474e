"""kgviz.index.extract_sample: calibration runs the extraction on a few chunks of the corpus, and
the estimate uses what they show: the model's output length, the server's token count and the
prompt tokens its cache skips (issue 23: the estimate missed a 0.5B build by its output tokens)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.support.fake_server import FakeServer, Recorded, Reply, chat_stream
from tests.support.index_fakes import corpus

from kgviz.config import Settings
from kgviz.index.estimate import calibrate_spec, estimate_cost, extraction_part, processed_prompt_tokens
from kgviz.index.extract_sample import (
    MAX_SAMPLE_CHUNKS,
    MIN_SAMPLE_CHUNKS,
    SAMPLE_FILE,
    SampleCall,
    corpus_chunks,
    load_sample,
    range_factor,
    ratio_standard_error,
    sample_order,
    settled,
    shape,
)
from kgviz.index.params import BuildParams
from kgviz.prompts.extraction import EXTRACT_TRIPLES_SYSTEM
from kgviz.providers.speed import SPEED_FILE, load_speed

FULL_PROMPT, REUSED = 1200, 950  # server tokens of an extraction prompt; what its prompt cache keeps


def call(chunk_tokens: int, out: int, processed: int = FULL_PROMPT, counted: int = 1000,
         population: int = 0) -> SampleCall:
    return SampleCall(chunk_tokens, counted, FULL_PROMPT, processed, out, 10.0, 0.0, 2.0, population)


def test_the_sample_shows_output_length_token_scale_and_prompt_reuse() -> None:
    s = shape([call(200, 500), call(300, 250, processed=FULL_PROMPT - REUSED)])
    assert s is not None and s.calls == 2
    assert s.output_ratio == pytest.approx(750 / 500)
    assert s.token_scale == pytest.approx(2 * FULL_PROMPT / 2000)
    assert s.reused_tokens == REUSED and "reused 950 prompt tokens" in s.describe()
    assert shape([call(200, 500), call(300, 250)]).reused_tokens == 0  # a server that re-reads every prompt
    assert shape([]) is None


def test_chunks_are_sampled_spread_over_the_lengths_and_always_in_the_same_order() -> None:
    chunks = corpus_chunks(corpus(), BuildParams(chunk_tokens=24, chunk_overlap=0))
    assert len(chunks) > 4
    order = sample_order(chunks)
    assert order == sample_order(list(reversed(chunks)))
    assert sorted(c.id for c in order) == sorted({c.id for c in chunks})  # every chunk once
    by_length = sorted(chunks, key=lambda c: (c.n_tokens, c.id))
    rank = {c.id: i for i, c in enumerate(by_length)}
    n = len(by_length)
    assert rank[order[0].id] == n // 2  # the median length first
    first3 = sorted(rank[c.id] for c in order[:3])
    assert first3[0] < n // 2 < first3[2]  # then one shorter and one longer
    assert sample_order(chunks[:1]) == chunks[:1] and sample_order([]) == []
    for k in range(1, 12):  # any size: a permutation
        fake = [replace(c, id=f"c{i}") for i, c in enumerate([chunks[0]] * k)]
        assert sorted(c.id for c in sample_order(fake)) == sorted(c.id for c in fake)


def test_the_sample_grows_until_the_output_ratio_settles() -> None:
    even = [call(100, 200), call(300, 600), call(200, 400)]  # every chunk 2 tokens out per token in
    assert ratio_standard_error(even) == pytest.approx(0.0) and settled(even, 100)
    assert not settled(even[:2], 100)  # a standard error needs a third call
    spread = [call(100, 500), call(300, 60), call(200, 700)]
    se = ratio_standard_error(spread)
    assert se is not None and se > 0.5 and not settled(spread, 100)
    assert settled(spread * 3, 100)  # at MAX_SAMPLE_CHUNKS it stops, settled or not
    assert len(spread * 3) >= MAX_SAMPLE_CHUNKS
    # the finite-population correction: a corpus sampled whole has no sampling error left
    assert ratio_standard_error(spread, population=3) == pytest.approx(0.0)
    assert settled(spread, population=3) and settled(spread[:2], population=2)
    assert ratio_standard_error(spread, population=4) < se  # most of a small corpus: less error
    assert ratio_standard_error(spread[:1]) is None


SEEN: list[Recorded] = []


def reply_for(rec: Recorded) -> Reply:
    """A llama.cpp-like server: extraction calls write 40 triples and say how many prompt tokens
    they processed (all for the first, all but the cached prefix after it); other calls are the
    calibration's short ones."""
    if rec.json["messages"][0]["content"] == EXTRACT_TRIPLES_SYSTEM:
        first = not SEEN
        SEEN.append(rec)
        processed = FULL_PROMPT if first else FULL_PROMPT - REUSED
        facts = [f"({who}; {did}; the harbour)\n" for who in ("Agnes Vohl", "Edda Lunn", "Aster Wren", "Kellhaven", "Tarrow")
                 for did in ("visited", "described", "named", "crossed", "mapped", "praised", "drew", "met")]
        return chat_stream(facts, FULL_PROMPT, 120,
                           delay_s=0.05, piece_delay_s=0.003,
                           timings={"prompt_n": processed, "prompt_ms": 50.0, "predicted_n": 120, "predicted_ms": 117.0})
    return chat_stream([f"{i}\n" for i in range(1, 71)], 150, delay_s=0.05, piece_delay_s=0.003)


def test_calibration_on_the_corpus_drives_the_estimate(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", db_dir=tmp_path / "db", timeout_s=10, max_retries=0)
    # the extraction's estimate (the skeleton's description calls: tests/index/test_estimate_describe.py)
    params = BuildParams(workers=1, chunk_tokens=24, chunk_overlap=0, ket_descriptions=False)
    docs = corpus()
    SEEN.clear()
    with FakeServer() as server:
        server.responder = reply_for
        spec = f"openai-compatible:qwen@{server.url}"
        calibrate_spec(spec, settings, workers=1, documents=docs, params=params)
        extraction = [r for r in server.requests if r.json["messages"][0]["content"] == EXTRACT_TRIPLES_SYSTEM]
        n = len(extraction)
        assert MIN_SAMPLE_CHUNKS <= n <= MAX_SAMPLE_CHUNKS and all(r.json["stream"] for r in extraction)
        est = estimate_cost(docs, params, spec, cache_dir=settings.cache_dir)
        plain = estimate_cost(docs, params, spec)  # tokens only, the assumed ratio
    sample = load_sample(settings.cache_dir, "openai-compatible", "qwen", server.url)
    assert [c.processed_tokens for c in sample] == [FULL_PROMPT] + [FULL_PROMPT - REUSED] * (n - 1)
    assert all(c.output_tokens == 120 for c in sample)
    chunks = corpus_chunks(docs, params)
    assert {c.population for c in sample} == {len(chunks)}
    # the calls stopped where the ratio settled, and not before
    assert settled(sample, len(chunks)) and not settled(sample[:-1], len(chunks))
    s = shape(sample)
    assert s is not None and s.reused_tokens == REUSED and s.calls == n
    # the output tokens follow the measured ratio, not BuildParams.expected_output_ratio
    picked = sample_order(chunks)[:n]
    assert s.output_ratio == pytest.approx(120 * n / sum(c.n_tokens for c in picked))
    assert est.output_tokens != plain.output_tokens and est.input_tokens == plain.input_tokens
    # the sample calls are timed calls too, counted with the prompt tokens the server processed
    rows = [json.loads(ln) for ln in (settings.cache_dir / SPEED_FILE).read_text().splitlines()]
    assert [r["input_tokens"] for r in rows[-n:]] == [FULL_PROMPT] + [FULL_PROMPT - REUSED] * (n - 1)
    speed = load_speed(settings.cache_dir, "openai-compatible", "qwen", server.url)
    assert speed is not None
    prompt = est.input_tokens * s.token_scale - (est.calls - 1) * REUSED
    assert processed_prompt_tokens(est, s) == pytest.approx(prompt)
    assert est.seconds == pytest.approx(prompt / speed.prompt_tps + est.output_tokens / speed.gen_tps)
    assert f"{n} of {len(chunks)} chunks extracted on the corpus" in est.time_source
    assert (settings.cache_dir / SAMPLE_FILE).read_text().count("\n") == n


def test_reuse_never_takes_more_than_a_calls_prompt() -> None:
    est = estimate_cost(corpus(), BuildParams(chunk_tokens=24, chunk_overlap=0), "openai-compatible:q@http://127.0.0.1:9/v1")
    s = shape([call(200, 500), call(300, 250, processed=1)])  # a server that skipped nearly all
    assert s is not None and processed_prompt_tokens(est, s) >= est.input_tokens * s.token_scale / est.calls - 1e-6


def test_the_range_spans_the_output_length_the_sample_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small model writes very different lengths for different chunks, so the estimate's range
    spans the ratio's 95 % interval, not only the measured rates."""
    import kgviz.index.estimate as estimate
    from kgviz.providers.speed import LocalSpeed

    spread = [call(200, 500), call(300, 250)]  # 2.5 and 0.83 output tokens per chunk token
    even = [call(200, 300), call(300, 450)]  # the same total ratio (1.5) from both calls
    s = shape(spread)
    se = ratio_standard_error(spread)
    assert s is not None and se is not None and se > 0
    t = range_factor(2)
    assert t == pytest.approx(12.706, abs=1e-3)  # Student's t, 1 degree of freedom, 95 %
    assert range_factor(8) == pytest.approx(2.365, abs=1e-3) and range_factor(1) == 0.0
    assert (s.output_ratio_low, s.output_ratio_high) == pytest.approx((max(0.0, 1.5 - t * se), 1.5 + t * se))
    assert f"({s.output_ratio_low:.2f}–{s.output_ratio_high:.2f}, 95% interval)" in s.describe()
    assert "interval" not in shape(even).describe()  # type: ignore[union-attr]
    whole = shape([replace(c, population=2) for c in spread])  # a corpus of two chunks, both sampled
    assert whole is not None and whole.output_ratio_low == whole.output_ratio_high == pytest.approx(1.5)
    assert "2 of 2 chunks extracted on the corpus (the whole corpus)" in whole.describe()
    speed = LocalSpeed(100.0, 10.0, 4, "alone", ("calibration",), prompt_range=(90.0, 110.0),
                       gen_range=(9.0, 11.0), ranged_calls=4, agreed=True)
    monkeypatch.setattr(estimate, "load_speed", lambda *a: speed)
    params = BuildParams(chunk_tokens=24, chunk_overlap=0)
    spec = "openai-compatible:q@http://127.0.0.1:9/v1"
    found = {}
    for name, calls in (("spread", spread), ("even", even)):
        monkeypatch.setattr(estimate, "load_sample", lambda *a, calls=calls: calls)
        found[name] = estimate_cost(corpus(), params, spec, cache_dir=Path("unused"))
    a, b = found["spread"], found["even"]
    assert a.seconds == pytest.approx(b.seconds) and a.output_tokens == b.output_tokens  # same point estimate
    assert a.seconds_low < b.seconds_low <= b.seconds <= b.seconds_high < a.seconds_high
    monkeypatch.setattr(estimate, "load_sample", lambda *a: [])  # tokens at the range's lowest ratio
    low_out = estimate_cost(corpus(), BuildParams(chunk_tokens=24, chunk_overlap=0,
                                                  expected_output_ratio=s.output_ratio_low), spec).output_tokens
    prompt = processed_prompt_tokens(a, s)
    assert a.seconds_low == pytest.approx(prompt / 110.0 + low_out / 11.0)
    # a server that kept the extraction prompt: the point estimate processes the first call's
    # prompt whole, the range's fast end lets the first call reuse it too (a build right after
    # its calibration: 1.5B on four paragraphs, +21 % without it)
    reusing = [call(200, 300, counted=300), call(300, 450, processed=FULL_PROMPT - REUSED, counted=300)]
    monkeypatch.setattr(estimate, "load_sample", lambda *a: reusing)
    r = extraction_part(estimate_cost(corpus(), params, spec, cache_dir=Path("unused")))  # no description calls
    rs = shape(reusing)
    assert rs is not None and rs.reused_tokens == REUSED
    assert r.input_tokens * rs.token_scale / r.calls > REUSED  # a call's prompt is longer than what is kept
    whole = processed_prompt_tokens(r, rs)
    assert processed_prompt_tokens(r, rs, first_reused=True) == pytest.approx(whole - REUSED)
    assert r.seconds == pytest.approx(whole / 100.0 + r.output_tokens / 10.0)
    assert r.seconds_low == pytest.approx((whole - REUSED) / 110.0 + r.output_tokens / 11.0)
